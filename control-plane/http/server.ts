/**
 * One port for everything: a `net` server peeks at each connection's first bytes. The HTTP/2
 * preface (`PRI * HTTP/2.0`) goes to an h2c server (gRPC, Connect over HTTP/2), the rest to an
 * HTTP/1.1 server (REST, Connect JSON, gRPC-Web). Node 20 ignores `allowHTTP1` on cleartext HTTP/2,
 * hence the peek (see docs/adr/0001-one-port.md).
 */
import http from 'node:http';
import http2 from 'node:http2';
import net from 'node:net';
import type { Duplex } from 'node:stream';
import { setMaxListeners } from 'node:events';
import { randomUUID } from 'node:crypto';
import type { DescService } from '@bufbuild/protobuf';
import type { ConnectRouter, HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { connectNodeAdapter } from '@connectrpc/connect-node';
import type { Logger } from '../../shared/logger.js';
import { UNMATCHED_ROUTE, type RequestObserver } from './metrics.js';
import { createRestRouter, type NodeReq, type NodeRes, type RestRoute } from './rest.js';
import { routeTemplateOf, setRouteTemplate } from './request-url.js';
import { type Authenticate, credentialCheck, wrapImpl } from './rpc.js';
import type { CorsHandler } from './cors.js';
import { InFlight } from './in-flight.js';
import { endQueuedAnswers } from './end-batch.js';
import { effectiveMaxConnections, H2_SERVER_OPTIONS, H2_SESSION_IDLE_TIMEOUT_MS, MAX_IN_FLIGHT_REQUESTS, REQUEST_TIMEOUT_MS, requestSeen, watchFirstRequest, watchRequestBody } from './connection-guard.js';
import { AppError } from '../../shared/errors.js';
import { errorBody, familyForPath } from './envelope.js';

export interface ServiceBinding<S extends DescService = DescService> {
  service: S;
  impl: ServiceImpl<S>;
  /** Runs before the credential check on the service's bearer methods (the portal's rate limit). */
  beforeAuth?: (ctx: HandlerContext) => void;
}

export interface ControlPlaneServerOptions {
  services: ServiceBinding[];
  routes: RestRoute[];
  logger: Logger;
  maxBodyBytes: number;
  /** The REST table's credential check before a body is read (rest.ts `authenticate`). */
  authenticate?: Authenticate;
  /** Plain handlers tried before the REST table (SSE streams, signed audio links). Return true when handled. */
  rawHandlers?: Array<(req: NodeReq, res: NodeRes) => boolean | Promise<boolean>>;
  /** Request durations of REST and raw handlers (RPCs are observed in `wrapImpl`, with their code). */
  observe?: RequestObserver;
  /** Every answered request's status and duration (the process's health report, issue 17). */
  onResponse?: (status: number, ms: number) => void;
  /** Browser clients (`CORS_ORIGINS`, cors.ts); absent: no CORS headers, preflights get 405/404 as any OPTIONS. */
  cors?: CorsHandler;
  /** The web console's pages (`/`, `/console/*`, control-plane/console/serve.ts); absent: not served. */
  console?: (req: NodeReq, res: NodeRes) => boolean;
  /** WebSocket upgrades (HTTP/1.1; the presence socket, control-plane/portal/socket.ts). Return true when handled; unhandled upgrades are refused. */
  upgradeHandlers?: Array<(req: http.IncomingMessage, socket: Duplex, head: Buffer) => boolean>;
  /** Open connections at most (`HTTP_MAX_CONNECTIONS`); lowered to what the open-files limit allows (connection-guard.ts). */
  maxConnections?: number;
  /** Tests: the connection guard's timeouts (connection-guard.ts defaults: 10 s, 15 s). */
  firstRequestTimeoutMs?: number;
  h2BodyIdleTimeoutMs?: number;
  requestTimeoutMs?: number;
  connectionsCheckingIntervalMs?: number;
  maxInFlight?: number;
}

export interface RunningServer {
  port: number;
  /** Open client connections (HTTP/1.1 and HTTP/2 sockets); the one-port server reports them. */
  connections?(): number;
  /** Requests being answered now (streams included). */
  inFlight?(): number;
  /**
   * Stops accepting connections. With `graceMs` (SIGTERM, docs/operations.md) requests in flight
   * may finish for up to that long (live streams such as SSE are not waited for; responses meanwhile
   * say `connection: close`); then every request still open is aborted and its socket closed.
   */
  close(opts?: { graceMs?: number }): Promise<void>;
}

/** Poll period of the in-flight wait of a graceful close. */
const DRAIN_POLL_MS = 50;

const H2_PREFACE = Buffer.from('PRI * HTTP/2.0');
/** Headers the gateway strips from public requests: they have no effect here either. */
export const STRIPPED = /^(x-internal-service|x-user-.*|x-vp-remote-ip)$/i;

/** Per-response fields of the access line and request metrics (symbol fields: no closure or WeakMap per request). */
const kStarted = Symbol('voiceplane.started');
const kRequestId = Symbol('voiceplane.requestId');
const kReq = Symbol('voiceplane.req');
/** Answered by the REST table or a raw handler (the rest went to Connect, observed in wrapImpl). */
const kViaRest = Symbol('voiceplane.viaRest');
interface Tracked {
  [kStarted]: number;
  [kRequestId]: string;
  [kReq]: NodeReq;
  [kViaRest]?: boolean;
}

export function createControlPlaneHandler(opts: ControlPlaneServerOptions, shutdown: AbortSignal) {
  const impls = new Map<string, Record<string, never>>();
  for (const b of opts.services) impls.set(b.service.typeName, b.impl as unknown as Record<string, never>);
  const authenticate = credentialCheck(opts.services, opts.authenticate);
  const rest = createRestRouter({ routes: opts.routes, impls: impls as never, logger: opts.logger, maxBodyBytes: opts.maxBodyBytes, authenticate });
  const connect = connectNodeAdapter({
    routes: (router: ConnectRouter) => {
      for (const b of opts.services) router.service(b.service, wrapImpl(b.service, b.impl, opts.logger, opts.observe, authenticate) as never);
    },
    readMaxBytes: opts.maxBodyBytes,
    jsonOptions: STRICT_UTF8_JSON,
    shutdownSignal: shutdown,
    fallback: (req, res) => {
      // A gRPC client names a method this server does not have: gRPC's answer, not an HTTP 404.
      if (isGrpc(req.headers['content-type'])) return unimplemented(res as unknown as NodeRes, req.url ?? '');
      const id = String(req.headers['x-request-id'] ?? '');
      const ip = String(req.headers['x-vp-remote-ip'] ?? '');
      restOrRaw(req, res as unknown as NodeRes, id, ip);
    },
  });

  // The access line carries only fixed, non-secret fields (ids, method, redacted path, status,
  // ms): the root logger's redaction walk of ~30 paths was ~5 % of a cached GET (issue 13).
  const accessLog = opts.logger.child({}, { redact: { paths: [], censor: '[redacted]' } });
  const rawHandlers = opts.rawHandlers ?? [];
  /**
   * Raw handlers decline synchronously for paths that are not theirs, so a REST request goes to
   * the table in the same tick: no promise and no microtask unless a handler answers with one.
   */
  function restOrRaw(req: NodeReq, res: NodeRes, requestId: string, remoteIp: string): void {
    (res as NodeRes & Tracked)[kViaRest] = true;
    for (let i = 0; i < rawHandlers.length; i++) {
      const r = rawHandlers[i]!(req, res);
      if (r === true) return rawAnswered(res);
      if (r !== false) {
        void r.then((handled) => (handled ? rawAnswered(res) : restFrom(i + 1, req, res, requestId, remoteIp)));
        return;
      }
    }
    void rest(req, res, requestId, remoteIp);
  }
  /** The rest of the raw handlers after one declined asynchronously, then the table. */
  async function restFrom(first: number, req: NodeReq, res: NodeRes, requestId: string, remoteIp: string): Promise<void> {
    for (let i = first; i < rawHandlers.length; i++) {
      const r = rawHandlers[i]!(req, res);
      if (r === true || (r !== false && (await r))) return rawAnswered(res);
    }
    return rest(req, res, requestId, remoteIp);
  }
  // Raw handlers (SSE, signed links, /metrics) have no template: one series for all of them.
  const rawAnswered = (res: NodeRes): void => setRouteTemplate(res, routeTemplateOf(res) ?? 'raw');

  /** `finish` of every response (one shared listener, `this` is the response). */
  function onFinish(this: NodeRes): void {
    const t = this as NodeRes & Tracked;
    const ms = performance.now() - t[kStarted];
    const req = t[kReq];
    const status = clientGaveUp(this) ? CLIENT_CLOSED_REQUEST : this.statusCode;
    opts.onResponse?.(status, ms);
    const grpcStatus = t[kViaRest] ? undefined : grpcStatusOf(this);
    accessLog.info({ requestId: t[kRequestId], method: req.method, path: redactPath(pathOf(req.url ?? '')), status, ...(grpcStatus !== undefined ? { grpcStatus } : {}), ms: Math.round(ms) }, 'request');
    // RPCs are observed in wrapImpl (with their code); REST and raw handlers here.
    if (opts.observe && t[kViaRest]) {
      opts.observe({ protocol: 'rest', method: req.method ?? 'GET', route: routeTemplateOf(this) ?? UNMATCHED_ROUTE, code: String(status), seconds: ms / 1000 });
    }
  }

  return (req: NodeReq, res: NodeRes) => {
    // Only `x-` names can be stripped: most requests skip the pattern entirely.
    for (const name in req.headers) if (name.charCodeAt(0) === 120 && STRIPPED.test(name)) delete req.headers[name];
    const given = req.headers['x-request-id'];
    const requestId = (typeof given === 'string' && given.slice(0, 64)) || randomUUID();
    req.headers['x-request-id'] = requestId;
    const remoteIp = req.socket?.remoteAddress ?? 'unknown';
    req.headers['x-vp-remote-ip'] = remoteIp;
    res.setHeader('x-request-id', requestId);
    const t = res as NodeRes & Tracked;
    t[kStarted] = performance.now();
    t[kRequestId] = requestId;
    t[kReq] = req;
    res.on('finish', onFinish);
    if (opts.cors?.(req, res)) return;
    if (opts.console?.(req, res)) return;
    if (req.url?.startsWith('/api/')) restOrRaw(req, res, requestId, remoteIp);
    else connect(req as never, res as never);
  };
}

/**
 * Connect-JSON bodies are UTF-8 (RFC 8259): bad bytes are invalid_argument, as REST's are 400,
 * instead of being stored as U+FFFD (binary protobuf strings are checked by protobuf-es). The
 * adapter passes `textDecoder` on to its JSON serialization; its options type does not name it.
 */
const STRICT_UTF8_JSON: { ignoreUnknownFields: boolean; textDecoder: { decode(bytes: Uint8Array): string } } = {
  ignoreUnknownFields: false, // the default, named so the type shares a property with the adapter's
  textDecoder: new TextDecoder('utf-8', { fatal: true }),
};

function isGrpc(contentType: string | string[] | undefined): boolean {
  return typeof contentType === 'string' && contentType.startsWith('application/grpc') && !contentType.startsWith('application/grpc-web');
}

/** UNIMPLEMENTED (12) in the trailers, as gRPC servers answer an unknown method. */
function unimplemented(res: NodeRes, url: string): void {
  res.writeHead(200, { 'content-type': 'application/grpc+proto' });
  (res as unknown as { addTrailers(t: Record<string, string>): void }).addTrailers({
    'grpc-status': '12',
    'grpc-message': `unknown method ${pathOf(url).slice(0, 200).replace(/[^\x20-\x24\x26-\x7e]/g, '?')}`,
  });
  res.end();
}

/**
 * The gRPC status an HTTP/2 response sent (in its trailers, or its headers for a trailers-only
 * answer): gRPC answers every call with HTTP 200, so the access line needs this to show failures.
 */
function grpcStatusOf(res: NodeRes): number | undefined {
  const stream = (res as unknown as { stream?: { sentTrailers?: Record<string, unknown>; sentHeaders?: Record<string, unknown> } }).stream;
  const v = stream?.sentTrailers?.['grpc-status'] ?? stream?.sentHeaders?.['grpc-status'];
  return v === undefined ? undefined : Number(v);
}

/** Logged and metered for an HTTP/2 request its client reset before any answer (nginx's convention). */
const CLIENT_CLOSED_REQUEST = 499;

/**
 * HTTP/2's compatibility response also 'finish'es when the client resets the stream, with the
 * default status 200: such a request was logged as a 200 that took as long as the client waited.
 */
function clientGaveUp(res: NodeRes): boolean {
  const stream = (res as unknown as { stream?: { rstCode?: number } }).stream;
  return !res.headersSent && (stream?.rstCode ?? 0) > 0;
}

/** The path of a request target, without its query string. */
function pathOf(url: string): string {
  const q = url.indexOf('?');
  return q < 0 ? url : url.slice(0, q);
}

/** Voice session ids are credentials: request logs keep only a prefix. */
export function redactPath(path: string): string {
  if (!path.includes('/voice/')) return path;
  return path.replace(/(\/voice\/(?:sessions|ws)\/)([^/]{6})[^/]*/, '$1$2…');
}

/** The answer past MAX_IN_FLIGHT_REQUESTS, in the route family's error shape (envelope.ts). */
const OVERLOADED = new AppError('SERVICE_UNAVAILABLE', 'too many requests in progress; retry in 1 s');

/** `HTTP_MAX_CONNECTIONS` default. */
export const DEFAULT_MAX_CONNECTIONS = 10_000;

export async function startControlPlaneServer(opts: ControlPlaneServerOptions & { port: number; host?: string }): Promise<RunningServer> {
  const shutdown = new AbortController();
  // Every in-flight request links its signal to this one: the listener count is the concurrency.
  // Not 0 ("unlimited"): Node 20's getMaxListeners then throws for an AbortSignal (undici calls it).
  setMaxListeners(1_000_000, shutdown.signal);
  const inner = createControlPlaneHandler(opts, shutdown.signal);
  // Requests in flight (a graceful close waits for them) and whether the server is closing.
  const inFlight = new InFlight();
  let closing = false;
  function leave(this: NodeRes): void {
    inFlight.delete(this);
  }
  const maxInFlight = opts.maxInFlight ?? MAX_IN_FLIGHT_REQUESTS;
  const handler = (req: NodeReq, res: NodeRes) => {
    requestSeen(req);
    if (inFlight.size >= maxInFlight) {
      res.writeHead(503, { 'content-type': 'application/json', 'retry-after': '1', ...(req.httpVersionMajor === 1 ? { connection: 'close' } : {}) });
      res.end(JSON.stringify(errorBody(familyForPath(pathOf(req.url ?? '')), OVERLOADED)));
      return;
    }
    watchRequestBody(req, res, opts.h2BodyIdleTimeoutMs, opts.requestTimeoutMs);
    inFlight.add(res);
    res.on('close', leave);
    if (closing && !res.headersSent) res.setHeader('connection', 'close');
    return inner(req, res);
  };
  const h1 = http.createServer(
    { keepAliveTimeout: 65_000, requestTimeout: opts.requestTimeoutMs ?? REQUEST_TIMEOUT_MS, ...(opts.connectionsCheckingIntervalMs ? { connectionsCheckingInterval: opts.connectionsCheckingIntervalMs } : {}) },
    handler as http.RequestListener,
  );
  // Node starts the checker of `headersTimeout` / `requestTimeout` when a server listens; h1 never
  // does (the front hands it its sockets), so without this neither timeout was ever enforced.
  h1.emit('listening');
  const h2 = http2.createServer(H2_SERVER_OPTIONS, handler as never);
  // An HTTP/2 connection idle that long (no frame either way) is closed with a GOAWAY.
  h2.on('session', (session) => session.setTimeout(H2_SESSION_IDLE_TIMEOUT_MS, () => session.close()));
  h1.on('upgrade', (req: http.IncomingMessage, socket: Duplex, head: Buffer) => {
    requestSeen(req as NodeReq);
    socket.on('error', () => socket.destroy());
    if (!(opts.upgradeHandlers ?? []).some((h) => h(req, socket, head))) socket.end('HTTP/1.1 404 Not Found\r\nconnection: close\r\n\r\n');
  });
  h1.on('clientError', (err: NodeJS.ErrnoException, socket) => {
    if (!socket.writable) return;
    // Node's checker reports a request (or its headers) not complete in time: 408, as Node's default.
    const timedOut = err.code === 'ERR_HTTP_REQUEST_TIMEOUT' || err.code === 'ERR_HTTP_HEADERS_TIMEOUT';
    socket.end(timedOut ? 'HTTP/1.1 408 Request Timeout\r\nconnection: close\r\n\r\n' : 'HTTP/1.1 400 Bad Request\r\nconnection: close\r\n\r\n');
  });
  const sockets = new Set<net.Socket>();
  // noDelay: sockets accepted here bypass the http servers' own accept path, which would set it;
  // without it Nagle + delayed ACK add ~40 ms to small responses.
  const front = net.createServer({ noDelay: true }, (sock) => {
    sockets.add(sock);
    watchFirstRequest(sock, opts.firstRequestTimeoutMs);
    sock.once('close', () => {
      sockets.delete(sock);
      inFlight.deleteConnection(sock);
    });
    sock.once('error', () => sock.destroy());
    sock.once('readable', () => {
      const head: Buffer | null = sock.read();
      if (!head) {
        sock.destroy();
        return;
      }
      sock.unshift(head);
      const isH2 = head.length >= H2_PREFACE.length ? head.subarray(0, H2_PREFACE.length).equals(H2_PREFACE) : H2_PREFACE.subarray(0, head.length).equals(head);
      (isH2 ? h2 : h1).emit('connection', sock);
    });
  });
  front.maxConnections = effectiveMaxConnections(opts.maxConnections ?? DEFAULT_MAX_CONNECTIONS);
  await new Promise<void>((resolve, reject) => {
    front.once('error', reject);
    front.listen(opts.port, opts.host ?? '0.0.0.0', () => resolve());
  });
  // After listening, an accept can still fail (EMFILE with every descriptor in use): logged, never fatal.
  let lastAcceptErrorAt = 0;
  front.on('error', (err: NodeJS.ErrnoException) => {
    const now = performance.now();
    if (now - lastAcceptErrorAt < 10_000) return;
    lastAcceptErrorAt = now;
    opts.logger.warn({ code: err.code, err: err.message, connections: sockets.size, maxConnections: front.maxConnections }, 'connection not accepted');
  });
  const addr = front.address();
  return {
    port: typeof addr === 'object' && addr ? addr.port : opts.port,
    connections: () => sockets.size,
    inFlight: () => inFlight.size,
    async close(closeOpts = {}) {
      closing = true;
      // Answers still to come end their connection: the client reconnects to another replica.
      for (const res of inFlight) if (!res.headersSent) res.setHeader('connection', 'close');
      const closed = new Promise<void>((resolve) => front.close(() => resolve()));
      h1.closeIdleConnections();
      const untilMs = performance.now() + (closeOpts.graceMs ?? 0);
      while (performance.now() < untilMs && [...inFlight].some((res) => !isStream(res))) {
        await new Promise((r) => setTimeout(r, DRAIN_POLL_MS));
        h1.closeIdleConnections();
      }
      shutdown.abort();
      // Answers already made this turn still go out before the sockets are cut.
      endQueuedAnswers();
      for (const s of sockets) s.destroy();
      await closed;
    },
  };
}

/** A live stream (SSE) never ends by itself: a graceful close does not wait for it. */
function isStream(res: NodeRes): boolean {
  return String(res.getHeader?.('content-type') ?? '').startsWith('text/event-stream');
}
