/**
 * The load balancer in front of several control-plane replicas: one fixed URL (what a deployment
 * sets as PUBLIC_BASE_URL, so carrier webhooks and callbacks reach whichever replica is up) over a
 * set of backends that a test changes as it replaces replicas, the way an orchestrator takes a
 * terminating pod out of its Service before stopping it.
 *
 * Per request: the body is read, then sent to the next backend in rotation over a new connection;
 * a backend that refuses the connection (stopped listening) is skipped and the next one tried, as
 * a proxy does for a connect failure. Nothing is retried once a backend has the request (it may
 * have acted on it): a failure after that is a 502 to the client.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';

const HOP_BY_HOP = new Set(['connection', 'keep-alive', 'transfer-encoding', 'upgrade', 'proxy-connection']);

export interface HttpBalancer {
  readonly port: number;
  readonly url: string;
  /** Backend ports in rotation. */
  readonly backends: number[];
  add(port: number): void;
  /** Out of rotation (requests already forwarded there finish). */
  remove(port: number): void;
  /** Requests answered 502 (no backend took them, or one failed mid-request). */
  readonly failed: number;
  close(): Promise<void>;
}

export async function startHttpBalancer(backends: number[] = []): Promise<HttpBalancer> {
  const ring = [...backends];
  let next = 0;
  let failed = 0;

  function forward(req: http.IncomingMessage, body: Buffer, res: http.ServerResponse, tried: Set<number>): void {
    const candidates = ring.filter((p) => !tried.has(p));
    if (!candidates.length) {
      failed++;
      res.writeHead(502).end('no backend');
      return;
    }
    const port = candidates[next++ % candidates.length]!;
    tried.add(port);
    const headers = Object.fromEntries(Object.entries(req.headers).filter(([k]) => !HOP_BY_HOP.has(k)));
    headers['content-length'] = String(body.length);
    let sent = false;
    const up = http.request({ host: '127.0.0.1', port, method: req.method, path: req.url, headers, agent: false }, (upRes) => {
      const out = Object.fromEntries(Object.entries(upRes.headers).filter(([k]) => !HOP_BY_HOP.has(k)));
      res.writeHead(upRes.statusCode ?? 502, out);
      upRes.pipe(res);
    });
    up.on('socket', (s) => s.once('connect', () => (sent = true)));
    up.on('error', () => {
      if (!sent) return forward(req, body, res, tried);
      failed++;
      if (!res.headersSent) res.writeHead(502).end('backend failed');
      else res.destroy();
    });
    up.end(body);
  }

  const server = http.createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => forward(req, Buffer.concat(chunks), res, new Set()));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    port,
    url: `http://127.0.0.1:${port}`,
    backends: ring,
    add: (p) => void (ring.includes(p) || ring.push(p)),
    remove: (p) => void (ring.includes(p) && ring.splice(ring.indexOf(p), 1)),
    get failed() {
      return failed;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
