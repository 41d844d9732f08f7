/**
 * Typed configuration (house style rule 13): the only module that reads `process.env`.
 * Precedence: explicit overrides, then the environment, then the default. A bad value stops the
 * process with one line naming the variable (`ConfigError`).
 */
import path from 'node:path';

export type LogLevel = 'fatal' | 'error' | 'warn' | 'info' | 'debug' | 'trace' | 'silent';
export type Role = 'all' | 'control-plane' | 'media-engine';

export interface Config {
  /** Which halves this process runs. `all` (default) runs both in one process. */
  role: Role;
  nodeEnv: string;
  /** Control plane listener: REST, Connect, gRPC-Web and h2c gRPC on one port. Default 8080. */
  httpPort: number;
  /** Media engine (uWebSockets.js) listener. Default 8081. */
  enginePort: number;
  /** Bind address of both listeners. Default 0.0.0.0. */
  host: string;
  /** Postgres URL; unset starts an embedded Postgres (PGlite) under DATA_DIR. */
  databaseUrl?: string;
  /** Redis URL; unset uses the in-process session registry (single node only). */
  redisUrl?: string;
  /** Public base URL of the control plane (TwiML, webhook and recording links). */
  publicBaseUrl: string;
  /** Public WebSocket base of this engine node, advertised in the registry. */
  enginePublicUrl: string;
  /** Organization API key seeded at start; acts as the organization owner. */
  orgApiKey?: string;
  /** 32-byte key (hex or base64) for secrets at rest; unset: generated under DATA_DIR with a warning. */
  secretsKey?: string;
  /** HS256 signing key for access tokens; unset: derived from the secrets key. */
  jwtSecret?: string;
  logLevel: LogLevel;
  /** Where embedded Postgres, generated keys and recordings live. Default ./data. */
  dataDir: string;
  /** SMTP URL for outgoing mail; unset: the development mailbox (refused in production). */
  smtpUrl?: string;
  /** From address of outgoing mail. */
  mailFrom: string;
  /** Request body limit in bytes for the control plane. Default 1 MiB. */
  maxBodyBytes: number;
  /** Concurrent voice sockets per engine node before upgrades get 503. Default 2000. */
  maxSockets: number;
  /** Concurrent calls per engine node before new sessions get a capacity error frame. Default 1000. */
  engineCapacity: number;
  /** Days per-turn audio is kept. Default 30. */
  audioRetentionDays: number;
  /** Seed a demo agent using the `sim` providers at start. Default true unless production. */
  seedDemo: boolean;
  /** Carrier (Twilio) REST API base; tests point it at the carrier simulator. Default https://api.twilio.com. */
  twilioApiBaseUrl: string;
  /** Verify `X-Twilio-Signature` on carrier webhooks whenever an auth token is known. Default true. */
  twilioVerifySignature: boolean;
  /** Deployment-wide carrier account, used when the agent's binding names none (docs/telephony.md). */
  twilioAccountSid?: string;
  twilioAuthToken?: string;
}

export class ConfigError extends Error {
  constructor(
    readonly variable: string,
    problem: string,
  ) {
    super(`invalid configuration: ${variable} ${problem}`);
  }
}

type Env = Record<string, string | undefined>;

function str(env: Env, name: string): string | undefined {
  const v = env[name];
  return v === undefined || v.trim() === '' ? undefined : v.trim();
}

function port(env: Env, name: string, dflt: number): number {
  return int(env, name, dflt, 0, 65535);
}

function int(env: Env, name: string, dflt: number, min: number, max: number): number {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (!/^-?\d+$/.test(v)) throw new ConfigError(name, `must be an integer, got "${v}"`);
  const n = Number(v);
  if (n < min || n > max) throw new ConfigError(name, `must be between ${min} and ${max}, got ${n}`);
  return n;
}

function bool(env: Env, name: string, dflt: boolean): boolean {
  const v = str(env, name);
  if (v === undefined) return dflt;
  if (/^(1|true|yes|on)$/i.test(v)) return true;
  if (/^(0|false|no|off)$/i.test(v)) return false;
  throw new ConfigError(name, `must be true or false, got "${v}"`);
}

function url(env: Env, name: string, protocols: string[]): string | undefined {
  const v = str(env, name);
  if (v === undefined) return undefined;
  let parsed: URL;
  try {
    parsed = new URL(v);
  } catch {
    throw new ConfigError(name, `must be a URL, got "${redactUrl(v)}"`);
  }
  if (!protocols.includes(parsed.protocol)) {
    throw new ConfigError(name, `must use ${protocols.join(' or ')}, got "${parsed.protocol}"`);
  }
  return v;
}

/** Never echo credentials embedded in a URL. */
function redactUrl(v: string): string {
  return v.replace(/\/\/[^@/]*@/, '//***@');
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const ROLES: Role[] = ['all', 'control-plane', 'media-engine'];

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  const nodeEnv = str(env, 'NODE_ENV') ?? 'development';
  const logLevel = (str(env, 'LOG_LEVEL') ?? 'info') as LogLevel;
  if (!LOG_LEVELS.includes(logLevel)) throw new ConfigError('LOG_LEVEL', `must be one of ${LOG_LEVELS.join(', ')}`);
  const role = (str(env, 'ROLE') ?? 'all') as Role;
  if (!ROLES.includes(role)) throw new ConfigError('ROLE', `must be one of ${ROLES.join(', ')}`);
  const httpPort = port(env, 'HTTP_PORT', 8080);
  const enginePort = port(env, 'ENGINE_PORT', 8081);
  const secretsKey = str(env, 'SECRETS_KEY');
  if (secretsKey !== undefined && decodeKey(secretsKey) === undefined) {
    throw new ConfigError('SECRETS_KEY', 'must be 32 bytes as 64 hex characters or base64');
  }
  const orgApiKey = str(env, 'ORG_API_KEY');
  if (orgApiKey !== undefined && orgApiKey.length < 16) throw new ConfigError('ORG_API_KEY', 'must be at least 16 characters');
  const smtpUrl = url(env, 'SMTP_URL', ['smtp:', 'smtps:']);
  const config: Config = {
    role,
    nodeEnv,
    httpPort,
    enginePort,
    host: str(env, 'HOST') ?? '0.0.0.0',
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: url(env, 'REDIS_URL', ['redis:', 'rediss:']),
    publicBaseUrl: (url(env, 'PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://127.0.0.1:${httpPort}`).replace(/\/$/, ''),
    enginePublicUrl: (url(env, 'ENGINE_PUBLIC_URL', ['ws:', 'wss:']) ?? `ws://127.0.0.1:${enginePort}`).replace(/\/$/, ''),
    orgApiKey,
    secretsKey,
    jwtSecret: str(env, 'JWT_SECRET'),
    logLevel,
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? './data'),
    smtpUrl,
    mailFrom: str(env, 'MAIL_FROM') ?? 'no-reply@voiceplane.local',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    maxSockets: int(env, 'MAX_SOCKETS', 2000, 1, 1_000_000),
    engineCapacity: int(env, 'ENGINE_CAPACITY', 1000, 1, 1_000_000),
    audioRetentionDays: int(env, 'AUDIO_RETENTION_DAYS', 30, 1, 3650),
    seedDemo: bool(env, 'SEED_DEMO', nodeEnv !== 'production'),
    twilioApiBaseUrl: (url(env, 'TWILIO_API_BASE_URL', ['http:', 'https:']) ?? 'https://api.twilio.com').replace(/\/$/, ''),
    twilioVerifySignature: bool(env, 'TWILIO_VERIFY_SIGNATURE', true),
    twilioAccountSid: str(env, 'TWILIO_ACCOUNT_SID'),
    twilioAuthToken: str(env, 'TWILIO_AUTH_TOKEN'),
    ...overrides,
  };
  return config;
}

/** Decodes a 32-byte key given as 64 hex characters or base64. */
export function decodeKey(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  const b = Buffer.from(value, 'base64');
  return b.length === 32 ? b : undefined;
}
