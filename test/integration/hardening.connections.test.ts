/**
 * The control plane's one port against clients that hold resources without using them (found by an
 * outside gRPC audit: 20,000 silent TCP connections exhausted the descriptors and an EMFILE killed
 * the process; 300 h2 connections x 200 half-sent request bodies took 3 GB and stalled every
 * listener). Real sockets against the real server with the guard's timeouts shortened.
 */
import http2 from 'node:http2';
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { effectiveMaxConnections, H2_MAX_CONCURRENT_STREAMS, openFilesLimit } from '../../control-plane/http/connection-guard.js';
import { captureLogger } from '../helpers/infra.js';

let server: RunningServer;
const log = captureLogger('info');
let slowRelease: () => void = () => {};

beforeAll(async () => {
  server = await startControlPlaneServer({
    port: 0,
    host: '127.0.0.1',
    logger: log.logger,
    maxBodyBytes: 1024 * 1024,
    services: [],
    routes: [],
    maxConnections: 64,
    firstRequestTimeoutMs: 300,
    h2BodyIdleTimeoutMs: 300,
    requestTimeoutMs: 2000,
    connectionsCheckingIntervalMs: 250,
    maxInFlight: 8,
    upgradeHandlers: [
      (_req, socket) => {
        // A WebSocket-style upgrade: the socket lives on past the first-request deadline.
        socket.write('HTTP/1.1 101 Switching Protocols\r\nupgrade: test\r\nconnection: upgrade\r\n\r\n');
        return true;
      },
    ],
    rawHandlers: [
      (req, res) => {
        if (req.url?.startsWith('/slow')) {
          // An answer slower than the body idle timeout: the client's request was complete.
          slowRelease = () => res.end('done');
          setTimeout(() => slowRelease(), 900);
          return true;
        }
        if (req.url === '/echo') {
          const parts: Buffer[] = [];
          req.on('data', (c: Buffer) => parts.push(c));
          req.on('end', () => res.end(Buffer.concat(parts)));
          return true;
        }
        return false;
      },
    ],
  });
});

afterAll(async () => {
  await server?.close();
});

function connect(): Promise<net.Socket> {
  return new Promise((resolve, reject) => {
    const s = net.connect(server.port, '127.0.0.1', () => resolve(s));
    s.on('error', reject);
  });
}
const closedWithin = (s: net.Socket, ms: number) =>
  new Promise<boolean>((resolve) => {
    if (s.destroyed) return resolve(true);
    const t = setTimeout(() => resolve(false), ms);
    s.once('close', () => (clearTimeout(t), resolve(true)));
  });

/** An h2c session to the server for `fn`, destroyed after it. */
async function withSession(fn: (session: http2.ClientHttp2Session) => Promise<void>): Promise<void> {
  const session = http2.connect(`http://127.0.0.1:${server.port}`);
  try {
    await fn(session);
  } finally {
    session.destroy();
  }
}

/** The whole answer of an h2 stream, as text. */
function readAll(stream: http2.ClientHttp2Stream): Promise<string> {
  let body = '';
  stream.setEncoding('utf8');
  stream.on('data', (c: string) => (body += c));
  return new Promise((resolve) => stream.once('end', () => resolve(body)));
}

/** How an h2 stream ended: its RST_STREAM code. */
const resetCode = (stream: http2.ClientHttp2Stream) => new Promise<number>((resolve) => stream.once('close', () => resolve(stream.rstCode)));

describe('connection guard', () => {
  it('a connection that sends no whole request within the deadline is closed, one byte or none; one that speaks is served', async () => {
    const silent = await connect();
    const oneByte = await connect();
    oneByte.write('G');
    const h2Preface = await connect();
    h2Preface.write('P');
    const [a, b, c] = await Promise.all([closedWithin(silent, 3000), closedWithin(oneByte, 3000), closedWithin(h2Preface, 3000)]);
    expect([a, b, c]).toEqual([true, true, true]);
    const res = await fetch(`http://127.0.0.1:${server.port}/echo`, { method: 'POST', body: 'hi' });
    expect(await res.text()).toBe('hi');
  });

  it('an upgraded connection (a WebSocket) is not cut by the first-request deadline', async () => {
    const s = await connect();
    s.write('GET /ws HTTP/1.1\r\nhost: x\r\nconnection: upgrade\r\nupgrade: test\r\n\r\n');
    await new Promise((r) => s.once('data', r));
    expect(await closedWithin(s, 900)).toBe(false);
    s.destroy();
  });

  it("HTTP/1.1: a request trickled past the request timeout gets 408 (Node's checker runs though the server never listens)", { timeout: 10_000 }, async () => {
    const s = await connect();
    s.write('POST /echo HTTP/1.1\r\nhost: x\r\ncontent-length: 10\r\n\r\nab');
    let got = '';
    s.on('data', (d: Buffer) => (got += d.toString()));
    // requestTimeout 2 s here, Node's checker every 250 ms (30 s in production).
    expect(await closedWithin(s, 5000)).toBe(true);
    expect(got).toMatch(/^HTTP\/1\.1 408/);
  });

  it('beyond maxConnections new connections are closed on accept, and the port serves again once they go', async () => {
    const held = await Promise.all(Array.from({ length: 64 }, () => connect()));
    const extra = await Promise.all(Array.from({ length: 6 }, () => connect().catch(() => undefined)));
    const closed = await Promise.all(extra.map((s) => (s ? closedWithin(s, 2000) : Promise.resolve(true))));
    expect(closed.every(Boolean)).toBe(true);
    for (const s of held) s.destroy();
    await new Promise((r) => setTimeout(r, 100));
    const res = await fetch(`http://127.0.0.1:${server.port}/echo`, { method: 'POST', body: 'again' });
    expect(await res.text()).toBe('again');
  });

  it('h2: at most 128 concurrent streams per connection; a body that stops arriving is cancelled; a slow answer is not', async () => {
    await withSession(async (session) => {
      await new Promise<void>((resolve) => session.once('remoteSettings', () => resolve()));
      expect(session.remoteSettings.maxConcurrentStreams).toBe(H2_MAX_CONCURRENT_STREAMS);
      // Half a body, then nothing: RST_STREAM (CANCEL) after the idle timeout.
      const stalled = session.request({ ':method': 'POST', ':path': '/echo', 'content-length': '10' }, { endStream: false });
      stalled.write('ab');
      expect(await resetCode(stalled)).toBe(http2.constants.NGHTTP2_CANCEL);
      // A body trickled a byte every 100 ms (never idle) still ends at the request deadline (2 s here).
      const trickled = session.request({ ':method': 'POST', ':path': '/echo' }, { endStream: false });
      const drip = setInterval(() => trickled.write('x'), 100);
      const t0 = Date.now();
      const trickleCode = await resetCode(trickled);
      clearInterval(drip);
      expect(trickleCode).toBe(http2.constants.NGHTTP2_CANCEL);
      expect(Date.now() - t0).toBeLessThan(4000);
      // A complete request whose answer takes longer than that timeout still gets it.
      expect(await readAll(session.request({ ':method': 'GET', ':path': '/slow' }))).toBe('done');
      // So does a POST whose body was sent whole.
      const whole = session.request({ ':method': 'POST', ':path': '/echo' });
      whole.end('whole body');
      expect(await readAll(whole)).toBe('whole body');
    });
  });
});

describe('requests in flight', () => {
  it('past maxInFlight a request is refused at once with 503 and Retry-After; the port serves again once they end', async () => {
    await withSession(async (session) => {
      // Eight requests whose bodies are still coming hold the eight places (for less than the 300 ms body idle timeout).
      const held = Array.from({ length: 8 }, () => {
        const r = session.request({ ':method': 'POST', ':path': '/echo' }, { endStream: false });
        r.write('x');
        r.resume();
        return r;
      });
      await new Promise((r) => setTimeout(r, 100));
      const res = await fetch(`http://127.0.0.1:${server.port}/echo`, { method: 'POST', body: 'over' });
      expect(res.status).toBe(503);
      expect(res.headers.get('retry-after')).toBe('1');
      expect(((await res.json()) as { error: { code: string } }).error.code).toBe('SERVICE_UNAVAILABLE');
      for (const r of held) r.end();
      await Promise.all(held.map((r) => new Promise((done) => r.once('close', done))));
      const ok = await fetch(`http://127.0.0.1:${server.port}/echo`, { method: 'POST', body: 'fine' });
      expect(await ok.text()).toBe('fine');
    });
  });
});

describe('the access log', () => {
  it('an HTTP/2 request its client resets before any answer is logged 499, not 200', async () => {
    await withSession(async (session) => {
      const req = session.request({ ':method': 'GET', ':path': '/slow-given-up' });
      req.on('error', () => {});
      await new Promise((r) => setTimeout(r, 100));
      req.close(http2.constants.NGHTTP2_CANCEL);
      await expect
        .poll(() => log.lines.map((l) => JSON.parse(l)).find((e) => e.msg === 'request' && e.path === '/slow-given-up')?.status, { timeout: 3000, interval: 20 })
        .toBe(499);
    });
  });
});

describe('the connection cap and the open-files limit', () => {
  it('reads the soft limit from /proc/self/limits and leaves room for the rest of the process', () => {
    const text = 'Limit                     Soft Limit           Hard Limit           Units     \nMax open files            1024                 524288               files     \n';
    expect(openFilesLimit(text)).toBe(1024);
    expect(openFilesLimit('Max open files            unlimited            unlimited            files\n')).toBeUndefined();
    expect(effectiveMaxConnections(10_000, 1024)).toBe(512);
    expect(effectiveMaxConnections(10_000, 20_000)).toBe(10_000);
    expect(effectiveMaxConnections(10_000, 300)).toBe(64);
    expect(effectiveMaxConnections(10_000, undefined)).toBe(10_000);
  });
});
