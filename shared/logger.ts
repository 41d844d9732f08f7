import { pino, type Logger } from 'pino';
import { logStream } from './log-stream.js';
import { isoNow } from './iso-time.js';

export type { Logger };

/**
 * Every field that can carry a secret, at any depth we log. Secrets are never logged: a field
 * missing from this list is a bug (tests grep captured logs for known secret values).
 */
export const REDACT_PATHS = [
  'password',
  'api_key',
  'apiKey',
  'auth_token',
  'authToken',
  'carrier_auth_token',
  'access_token',
  'refresh_token',
  'token',
  'secret',
  'authorization',
  'headers.authorization',
  'req.headers.authorization',
  'req.headers["x-auth-token"]',
  'req.headers.cookie',
  '*.password',
  '*.api_key',
  '*.apiKey',
  '*.auth_token',
  '*.access_token',
  '*.refresh_token',
  '*.secret',
  // Webhook signing secrets (control-plane/webhooks): shown once to the client, never logged.
  'webhook_secret',
  'webhookSecret',
  '*.webhook_secret',
  '*.webhookSecret',
];

export interface LoggerOptions {
  level?: string;
  /** A destination stream (tests capture logs through it). */
  destination?: NodeJS.WritableStream;
  /** Without `destination`: a file the process's shared log stream writes to instead of stdout (benches: /dev/null). */
  file?: string;
  name?: string;
}

let stampedIso = '';
let stamp = '';
/**
 * pino's `isoTime`, built once per millisecond: a busy control plane writes ~30 access lines per
 * millisecond, and `toISOString` was the costliest part of a line after the JSON itself.
 */
export function isoTimeOncePerMs(): string {
  const iso = isoNow();
  if (iso !== stampedIso) {
    stampedIso = iso;
    stamp = `,"time":"${iso}"`;
  }
  return stamp;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const options = {
    level: opts.level ?? 'info',
    name: opts.name,
    redact: { paths: REDACT_PATHS, censor: '[redacted]' },
    base: { pid: process.pid },
    timestamp: isoTimeOncePerMs,
  };
  if (opts.destination) return pino(options, opts.destination as pino.DestinationStream);
  // Asynchronous stdout, one hand-over per event-loop turn (log-stream.ts): a busy process makes
  // one write per batch instead of one synchronous write per line (one per request with the
  // access log: a system call per request on top of the response's own). What is pending is
  // written when the process exits.
  return pino(options, logStream(opts.file ?? 1));
}
