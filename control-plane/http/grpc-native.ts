/**
 * gRPC served by `@grpc/grpc-js`'s server on a port of its own (`GRPC_PORT`), next to the one-port
 * listener. Same `ServiceImpl`s, same `wrapImpl` error mapping, and a plain HandlerContext carrying
 * the call's metadata as request headers, so auth and API-key scopes work unchanged. Why a second
 * listener: Connect's gRPC path costs several times grpc-js's per unary call (docs/adr/0004-grpc-listener.md).
 */
import { randomUUID } from 'node:crypto';
import { isIP } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { create, fromBinary, toBinary, type DescMethod, type DescService } from '@bufbuild/protobuf';
import { ConnectError, createContextValues, type HandlerContext } from '@connectrpc/connect';
import { setTrailerStatus } from '@connectrpc/connect/protocol-grpc';
import type { Logger } from '../../shared/logger.js';
import { kRemoteIp, kRequestId } from './context.js';
import type { RequestObserver } from './metrics.js';
import { type Authenticate, credentialCheck, toConnectError, wrapImpl } from './rpc.js';
import { invalid } from '../../shared/errors.js';
import { STRIPPED, type RunningServer, type ServiceBinding } from './server.js';
import { H2_MAX_CONCURRENT_STREAMS, H2_SESSION_IDLE_TIMEOUT_MS, REQUEST_TIMEOUT_MS } from './connection-guard.js';

export interface GrpcNativeOptions {
  services: ServiceBinding[];
  logger: Logger;
  /** Largest request message accepted (RESOURCE_EXHAUSTED above it), as on the HTTP listener. */
  maxBodyBytes: number;
  port: number;
  host?: string;
  /** Request durations (metrics), as on the one-port listener. */
  observe?: RequestObserver;
  /** The credential check before the handler (rpc.ts wrapImpl), as on the one-port listener. */
  authenticate?: Authenticate;
  /** A connection without calls is closed after this long. Default H2_SESSION_IDLE_TIMEOUT_MS (tests shorten it). */
  idleMs?: number;
  /** Every connection is drained (GOAWAY) after this long, its calls cut `REQUEST_TIMEOUT_MS` later. Default GRPC_MAX_CONNECTION_AGE_MS. */
  maxAgeMs?: number;
  /** Calls still running when a connection reaches its age: cut after this long. Default REQUEST_TIMEOUT_MS. */
  ageGraceMs?: number;
}

/**
 * grpc-js has no request-body timer like the one port's (connection-guard.ts): a call whose
 * message never arrives would hold its stream for ever. Bounding every connection's age bounds
 * such a call to age + grace; clients reconnect on the GOAWAY transparently (all calls are unary).
 */
export const GRPC_MAX_CONNECTION_AGE_MS = 300_000;

type AnyFn = (req: unknown, ctx: HandlerContext) => Promise<unknown>;

function requestHeaders(md: grpc.Metadata): Headers {
  const h = new Headers();
  const map = md.getMap();
  for (const key in map) {
    const v = map[key];
    // Binary (-bin) metadata is not read by any handler; only text values become headers. Headers
    // a gateway strips from public requests have no effect here either (as on the HTTP listener).
    if (typeof v === 'string' && !STRIPPED.test(key)) h.set(key, v);
  }
  return h;
}

/**
 * The peer's address without its port, for per-IP rate limits and audit rows: the same string the
 * one-port listener takes from its socket. grpc-js servers say "127.0.0.1:5000" and, for IPv6,
 * "::1:5000" (no brackets); channels and older releases "ipv4:127.0.0.1:5000" / "ipv6:[::1]:5000".
 * With the port left on, every connection was a new client to the per-IP limits.
 */
export function peerAddress(peer: string): string {
  const bare = peer.replace(/^ipv[46]:/, '');
  const bracketed = /^\[([^\]]+)\]:\d+$/.exec(bare);
  if (bracketed) return bracketed[1]!;
  const withPort = /^(.*):\d+$/.exec(bare);
  if (withPort && isIP(withPort[1]!)) return withPort[1]!;
  return bare || 'unknown';
}

function toMetadata(headers: Headers, into = new grpc.Metadata()): grpc.Metadata {
  headers.forEach((value, key) => {
    if (key === 'grpc-status' || key === 'grpc-message') return; // grpc-js writes these from the status
    if (key.endsWith('-bin')) into.set(key, Buffer.from(value, 'base64'));
    else into.set(key, value);
  });
  return into;
}

/** The Connect error as a gRPC status: same code, message, details (grpc-status-details-bin) and metadata. */
function toStatus(err: unknown, trailer: Headers): Partial<grpc.StatusObject> {
  const ce = ConnectError.from(err);
  const t = setTrailerStatus(new Headers(trailer), ce);
  return { code: ce.code as number as grpc.status, details: ce.rawMessage, metadata: toMetadata(t) };
}

/**
 * Bytes that are not the method's request message. grpc-js answers a throwing deserializer with
 * INTERNAL, which reads as our fault; the handler answers this marker with INVALID_ARGUMENT.
 */
class MalformedRequest {
  constructor(readonly reason: string) {}
}

function decodeRequest(m: DescMethod, buf: Buffer): unknown {
  try {
    return fromBinary(m.input, buf);
  } catch (e) {
    return new MalformedRequest(e instanceof Error ? e.message : String(e));
  }
}

function unaryHandler(service: DescService, method: DescMethod, fn: AnyFn, logger: Logger): grpc.handleUnaryCall<unknown, unknown> {
  const path = `/${service.typeName}/${method.name}`;
  return (call, callback) => {
    const started = performance.now();
    const requestHeader = requestHeaders(call.metadata);
    const requestId = requestHeader.get('x-request-id')?.slice(0, 64) || randomUUID();
    requestHeader.set('x-request-id', requestId);
    // The signal aborts only when the client cancels (or its deadline passes). grpc-js also emits
    // 'cancelled' when the stream closes after a normal answer: that one must not abort (a
    // DOMException per call was ~4 % of the server's CPU in the profile).
    const ac = new AbortController();
    let answered = false;
    call.once('cancelled', () => answered || ac.abort());
    const responseHeader = new Headers();
    const responseTrailer = new Headers();
    const ctx: HandlerContext = {
      service,
      method,
      protocolName: 'grpc',
      requestMethod: 'POST',
      url: path,
      requestHeader,
      responseHeader,
      responseTrailer,
      signal: ac.signal,
      timeoutMs: () => {
        const d = call.getDeadline();
        return d === Infinity ? undefined : Math.max(0, +d - Date.now());
      },
      values: createContextValues().set(kRequestId, requestId).set(kRemoteIp, peerAddress(call.getPeer())),
    };
    const done = (code: number) => logger.info({ requestId, method: 'POST', path, grpcStatus: code, ms: Math.round(performance.now() - started) }, 'request');
    const run =
      call.request instanceof MalformedRequest
        ? Promise.reject(toConnectError(invalid('body', `not a ${method.input.typeName} message: ${call.request.reason}`), logger, ctx))
        : fn(call.request, ctx);
    run.then(
      (out) => {
        answered = true;
        responseHeader.set('x-request-id', requestId);
        call.sendMetadata(toMetadata(responseHeader));
        callback(null, out, responseTrailer.keys().next().done ? undefined : toMetadata(responseTrailer));
        done(0);
      },
      (err: unknown) => {
        answered = true;
        // An error is a trailers-only answer: the request id travels there.
        responseTrailer.set('x-request-id', requestId);
        const status = toStatus(err, responseTrailer);
        callback(status as grpc.ServerErrorResponse);
        done(status.code ?? 2);
      },
    );
  };
}

/** One grpc-js service definition per proto service: protobuf-es binary codecs, unary methods only. */
export function addServices(server: grpc.Server, services: ServiceBinding[], logger: Logger, observe?: RequestObserver, authenticate?: Authenticate): void {
  const check = credentialCheck(services, authenticate);
  for (const b of services) {
    const wrapped = wrapImpl(b.service, b.impl, logger, observe, check) as unknown as Record<string, AnyFn>;
    const def: Record<string, grpc.MethodDefinition<unknown, unknown>> = {};
    const handlers: grpc.UntypedServiceImplementation = {};
    for (const m of b.service.methods) {
      if (m.methodKind !== 'unary') throw new Error(`${b.service.typeName}.${m.name}: only unary methods are served over grpc-js`);
      def[m.localName] = {
        path: `/${b.service.typeName}/${m.name}`,
        requestStream: false,
        responseStream: false,
        requestSerialize: (v: unknown) => Buffer.from(toBinary(m.input, v as never)),
        requestDeserialize: (buf: Buffer) => decodeRequest(m, buf),
        // Implementations may return an init object; `create` is a no-op on a message.
        responseSerialize: (v: unknown) => Buffer.from(toBinary(m.output, create(m.output, v as never))),
        responseDeserialize: (buf: Buffer) => fromBinary(m.output, buf),
      };
      handlers[m.localName] = unaryHandler(b.service, m, wrapped[m.localName]!, logger);
    }
    server.addService(def as grpc.ServiceDefinition, handlers);
  }
}

export async function startGrpcNativeServer(opts: GrpcNativeOptions): Promise<RunningServer> {
  // The same stream bound per connection as the one port (connection-guard.ts).
  const server = new grpc.Server({
    'grpc.max_receive_message_length': opts.maxBodyBytes,
    'grpc.max_concurrent_streams': H2_MAX_CONCURRENT_STREAMS,
    'grpc.max_connection_idle_ms': opts.idleMs ?? H2_SESSION_IDLE_TIMEOUT_MS,
    'grpc.max_connection_age_ms': opts.maxAgeMs ?? GRPC_MAX_CONNECTION_AGE_MS,
    'grpc.max_connection_age_grace_ms': opts.ageGraceMs ?? REQUEST_TIMEOUT_MS,
    // Dead peers (no TCP reset) are found by pings instead of holding their connection.
    'grpc.keepalive_time_ms': 60_000,
    'grpc.keepalive_timeout_ms': 20_000,
  });
  addServices(server, opts.services, opts.logger, opts.observe, opts.authenticate);
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync(`${opts.host ?? '0.0.0.0'}:${opts.port}`, grpc.ServerCredentials.createInsecure(), (err, p) => (err ? reject(err) : resolve(p))),
  );
  return {
    port,
    close: () =>
      new Promise<void>((resolve) => {
        // Calls in flight get a short grace, then the rest are cut (as the HTTP listener destroys its sockets).
        const timer = setTimeout(() => server.forceShutdown(), 2_000);
        server.tryShutdown(() => {
          clearTimeout(timer);
          resolve();
        });
      }),
  };
}
