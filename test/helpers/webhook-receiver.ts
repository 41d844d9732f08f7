/**
 * A customer's webhook receiver for tests: https on 127.0.0.1 with the development certificate
 * (trusted through NODE_EXTRA_CA_CERTS, see dev-tls.global.ts). Answers from a script of responses
 * (then 200), records every request with its raw body bytes, and can go away and come back on the
 * same port.
 */
import https from 'node:https';
import type { AddressInfo, Socket } from 'node:net';
import { createHmac, timingSafeEqual } from 'node:crypto';
import { devTls } from './tls.js';

export interface ReceivedRequest {
  headers: Record<string, string>;
  /** The raw body bytes as received. */
  raw: Buffer;
  json: any;
  /** Date.now() when the body had arrived. */
  receivedAt: number;
}

export interface ScriptedResponse {
  status: number;
  headers?: Record<string, string>;
  body?: string;
  /** Never answer (a receiver that hangs). */
  hang?: boolean;
}

export interface WebhookReceiver {
  readonly port: number;
  readonly url: string;
  readonly requests: ReceivedRequest[];
  /** Responses for the next requests, in order; afterwards every request gets 200. */
  respond(...responses: ScriptedResponse[]): void;
  /**
   * A slow endpoint: from now on every answer waits until the returned `release()` (the deliveries
   * stay in flight meanwhile). `held` counts the requests waiting.
   */
  hold(): () => void;
  readonly held: number;
  /** Resolves once `n` requests in total have arrived. */
  until(n: number): Promise<ReceivedRequest>;
  /** Stops listening and drops every connection (the endpoint is down). */
  stop(): Promise<void>;
  /** Listens again on the same port. */
  start(): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(path = '/hooks/voiceplane'): Promise<WebhookReceiver> {
  const script: ScriptedResponse[] = [];
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  let waiters: Array<{ n: number; resolve: (r: ReceivedRequest) => void }> = [];
  /** Answers waiting for `release()` while held. */
  let holding: Array<() => void> | undefined;
  const server = https.createServer({ ...devTls() }, (req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const raw = Buffer.concat(chunks);
      let json: unknown;
      try {
        json = JSON.parse(raw.toString('utf8'));
      } catch {
        json = undefined;
      }
      const r: ReceivedRequest = { headers: req.headers as Record<string, string>, raw, json, receivedAt: Date.now() };
      requests.push(r);
      waiters = waiters.filter((w) => (requests.length >= w.n ? (w.resolve(requests[w.n - 1]), false) : true));
      const next = script.shift() ?? { status: 200, body: 'ok' };
      if (next.hang) return;
      const answer = () => {
        res.writeHead(next.status, next.headers ?? {});
        res.end(next.body ?? '');
      };
      if (holding) holding.push(answer);
      else answer();
    });
  });
  server.on('connection', (s: Socket) => {
    sockets.add(s);
    s.on('close', () => sockets.delete(s));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  async function stop(): Promise<void> {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    for (const s of sockets) s.destroy();
    await closed;
  }
  return {
    port,
    url: `https://127.0.0.1:${port}${path}`,
    requests,
    respond: (...r) => void script.push(...r),
    hold() {
      const mine: Array<() => void> = [];
      holding = mine;
      return () => {
        if (holding === mine) holding = undefined;
        for (const answer of mine.splice(0)) answer();
      };
    },
    get held() {
      return holding?.length ?? 0;
    },
    until: (n) => (requests.length >= n ? Promise.resolve(requests[n - 1]) : new Promise((resolve) => waiters.push({ n, resolve }))),
    stop,
    start: () => new Promise<void>((resolve) => server.listen(port, '127.0.0.1', resolve)),
    async close() {
      if (server.listening) await stop();
    },
  };
}

/** What a receiver does (docs/webhooks.md): HMAC-SHA256 over `<t>.<raw body>`, constant-time compare. */
export function verifySignature(secret: string, r: ReceivedRequest): boolean {
  const header = r.headers['webhook-signature'] ?? '';
  const parts = Object.fromEntries(header.split(',').map((kv) => kv.split('=') as [string, string]));
  if (parts.t !== r.headers['webhook-timestamp']) return false;
  const expected = createHmac('sha256', secret).update(`${parts.t}.`).update(r.raw).digest();
  const got = Buffer.from(parts.v1 ?? '', 'hex');
  return got.length === expected.length && timingSafeEqual(got, expected);
}
