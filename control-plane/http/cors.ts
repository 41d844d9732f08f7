/**
 * CORS for browser clients of the API (`CORS_ORIGINS`). Only listed origins (or every origin with
 * `*`) get `access-control-allow-origin`; `access-control-allow-credentials` is never sent, so a
 * browser never attaches cookies or HTTP auth to a cross-origin request: our credentials travel in
 * the `Authorization` header, which a page sets itself. A preflight from an unlisted origin is 403.
 */
import type { NodeReq, NodeRes } from './rest.js';

const ALLOW_METHODS = 'GET, POST, PUT, PATCH, DELETE, OPTIONS';
/** Request headers a browser client may send: ours, Connect's and gRPC-Web's. */
const ALLOW_HEADERS = [
  'authorization',
  'content-type',
  'idempotency-key',
  'x-request-id',
  'x-auth-token',
  'x-api-key',
  'connect-protocol-version',
  'connect-timeout-ms',
  'grpc-timeout',
  'x-grpc-web',
  'x-user-agent',
];
const EXPOSE_HEADERS = 'x-request-id, retry-after, grpc-status, grpc-message, x-ratelimit-limit, x-ratelimit-remaining';
/** Browsers cap this themselves (Chromium: 2 h); 10 min keeps a changed policy effective soon. */
const MAX_AGE_S = '600';

export type CorsHandler = (req: NodeReq, res: NodeRes) => boolean;

/** Returns a handler that sets the CORS headers and answers preflights (true when it answered). */
export function createCors(origins: readonly string[]): CorsHandler | undefined {
  if (origins.length === 0) return undefined;
  const any = origins.includes('*');
  const listed = new Set(origins.map((o) => o.toLowerCase()));
  const allowed = (origin: string) => any || listed.has(origin.toLowerCase());
  return (req, res) => {
    const origin = req.headers.origin;
    if (typeof origin !== 'string' || origin === '') return false;
    const ok = allowed(origin);
    const preflight = req.method === 'OPTIONS' && typeof req.headers['access-control-request-method'] === 'string';
    if (ok) {
      res.setHeader('access-control-allow-origin', any ? '*' : origin);
      res.setHeader('vary', 'origin');
      res.setHeader('access-control-expose-headers', EXPOSE_HEADERS);
    }
    if (!preflight) return false;
    if (!ok) {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ error: { code: 'FORBIDDEN', message: 'origin is not allowed (CORS_ORIGINS)' } }));
      return true;
    }
    res.writeHead(204, {
      'access-control-allow-methods': ALLOW_METHODS,
      'access-control-allow-headers': ALLOW_HEADERS.join(', '),
      'access-control-max-age': MAX_AGE_S,
      'content-length': '0',
    });
    res.end();
    return true;
  };
}
