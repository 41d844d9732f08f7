/**
 * Bounds on the control plane's one port (HTTP/1.1 and h2c) against clients that hold resources
 * without using them. An outside audit took the process down twice this way:
 *
 * - TCP connections that never send a byte were kept forever (the front server waits for the first
 *   bytes to tell HTTP/1.1 from HTTP/2): 20,000 of them used up the process's file descriptors and
 *   the next `/proc` read threw EMFILE. Now a connection must complete its first request's headers
 *   within FIRST_REQUEST_TIMEOUT_MS (one byte is not enough), an HTTP/2 connection with no frame for
 *   H2_SESSION_IDLE_TIMEOUT_MS is closed (GOAWAY), HTTP/1.1 keeps Node's own `headersTimeout` for
 *   later requests and REQUEST_TIMEOUT_MS for a whole request (the servers behind the front never
 *   `listen()`, so their connection checker is started by hand), and at most `maxConnections` are
 *   open at once (beyond it new ones are closed on accept), never more than the descriptors the
 *   process may open.
 * - HTTP/2 streams that announce a body and never finish it were unbounded (Node's default allows
 *   2^32-1 concurrent streams per connection, and nothing timed out a request body): 300
 *   connections x 200 such streams took 3 GB and stalled every listener. Now a connection carries
 *   at most H2_MAX_CONCURRENT_STREAMS, a request body that stops arriving for
 *   H2_BODY_IDLE_TIMEOUT_MS or is not complete within REQUEST_TIMEOUT_MS is cancelled, and past
 *   MAX_IN_FLIGHT_REQUESTS open requests new ones are refused with 503.
 */
import { readFileSync } from 'node:fs';
import http2 from 'node:http2';
import type net from 'node:net';
import type { NodeReq, NodeRes } from './rest.js';

export const FIRST_REQUEST_TIMEOUT_MS = 10_000;
/** A whole request (headers and body) must arrive within this (HTTP/1.1 `requestTimeout`, HTTP/2 body deadline). */
export const REQUEST_TIMEOUT_MS = 60_000;
export const H2_SESSION_IDLE_TIMEOUT_MS = 120_000;
export const H2_MAX_CONCURRENT_STREAMS = 128;
export const H2_BODY_IDLE_TIMEOUT_MS = 15_000;
/**
 * Requests answered at once by one process, over all connections (streams included); beyond it a
 * request gets 503 with `Retry-After: 1` at once (gRPC: UNAVAILABLE), holding nothing. Each held
 * HTTP/2 request costs ~45 KB: this bounds what a flood of open requests can take (~370 MB).
 */
export const MAX_IN_FLIGHT_REQUESTS = 8192;
/** Descriptors kept for everything else (database and Redis pools, files, the engine's sockets). */
const RESERVED_DESCRIPTORS = 512;

/** The process's soft limit on open files (Linux `/proc/self/limits`), or undefined where unreadable. */
export function openFilesLimit(limitsText?: string): number | undefined {
  let text = limitsText;
  if (text === undefined) {
    try {
      text = readFileSync('/proc/self/limits', 'utf8');
    } catch {
      return undefined;
    }
  }
  const m = /^Max open files\s+(\d+|unlimited)\s/m.exec(text);
  if (!m || m[1] === 'unlimited') return undefined;
  return Number(m[1]);
}

/** The configured connection cap, lowered to what the descriptor limit leaves room for (at least 64). */
export function effectiveMaxConnections(configured: number, fdLimit = openFilesLimit()): number {
  if (fdLimit === undefined) return configured;
  return Math.max(64, Math.min(configured, fdLimit - RESERVED_DESCRIPTORS));
}

const kRequestSeen = Symbol('voiceplane.firstRequestSeen');

/**
 * A fresh socket is closed unless a request arrives on it within `timeoutMs` (an absolute
 * deadline: trickled bytes do not extend it). `requestSeen` marks it, from the request handler.
 */
export function watchFirstRequest(sock: net.Socket, timeoutMs = FIRST_REQUEST_TIMEOUT_MS): void {
  const timer = setTimeout(() => {
    if ((sock as unknown as Record<symbol, unknown>)[kRequestSeen]) return;
    // A reset, not `destroy()`: once an HTTP/2 session has taken the socket over, `destroy()`
    // leaves the connection open (measured); the reset closes it whoever holds it.
    sock.resetAndDestroy();
  }, timeoutMs);
  timer.unref();
  sock.once('close', () => clearTimeout(timer));
}

/** A request arrived on `req`'s connection (for HTTP/2 the socket is a proxy that forwards the mark to the real one). */
export function requestSeen(req: NodeReq): void {
  const sock = req.socket as unknown as Record<symbol, boolean> | undefined;
  if (sock && !sock[kRequestSeen]) sock[kRequestSeen] = true;
}

export const H2_SERVER_OPTIONS: http2.ServerOptions = { settings: { maxConcurrentStreams: H2_MAX_CONCURRENT_STREAMS } };

/**
 * HTTP/2 request: cancelled (RST_STREAM CANCEL) if its body stops arriving for
 * H2_BODY_IDLE_TIMEOUT_MS before the client ends it. Only the client's half counts (a slow answer
 * is not the client's fault): a request without a body (END_STREAM on its headers) is not
 * watched, and the watch ends once the client has sent its whole body. HTTP/1.1: nothing to do.
 */
export function watchRequestBody(req: NodeReq, res: NodeRes, idleMs = H2_BODY_IDLE_TIMEOUT_MS, deadlineMs = REQUEST_TIMEOUT_MS): void {
  if (req.httpVersionMajor !== 2) return;
  const stream = (req as unknown as { stream?: http2.ServerHttp2Stream }).stream;
  if (!stream || stream.endAfterHeaders) return;
  const cancel = () => {
    if (!stream.state?.remoteClose && !stream.destroyed) stream.close(http2.constants.NGHTTP2_CANCEL);
    else done();
  };
  // Idle: nothing for idleMs. Deadline: a body trickled a byte at a time still ends by deadlineMs.
  const deadline = setTimeout(cancel, deadlineMs);
  deadline.unref();
  const done = () => {
    stream.setTimeout(0);
    clearTimeout(deadline);
  };
  stream.setTimeout(idleMs, cancel);
  req.once('end', done);
  res.once('close', done);
}
