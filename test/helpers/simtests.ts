/**
 * Helpers of the simulation-test suites (issue 20): a tool endpoint whose answers the test holds
 * and releases, an SSE reader for the test-run stream, and an agent on the `sim` LLM.
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'vitest';
import { api, type TestUser } from './accounts.js';

type AppRef = Parameters<typeof api>[0];

export interface HeldRequest {
  url: URL;
  /** Answers the held request with this JSON. */
  release(body: unknown): void;
  /** Resolves when the client closed the connection (e.g. a cancelled run aborted the tool call). */
  closed: Promise<void>;
}

/** A tool endpoint: answers at once with `answer(url)`, unless `hold(url)` is true (then the test releases it). */
export async function startToolServer(answer: (url: URL) => unknown, hold: (url: URL) => boolean = () => false) {
  const held: HeldRequest[] = [];
  const seen: URL[] = [];
  const waiters: Array<() => void> = [];
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://tool');
    seen.push(url);
    const closed = new Promise<void>((resolve) => res.once('close', () => resolve()));
    const send = (body: unknown) => {
      if (!res.writableEnded && !res.destroyed) res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));
    };
    if (hold(url)) held.push({ url, release: send, closed });
    else send(answer(url));
    waiters.splice(0).forEach((w) => w());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}`,
    seen,
    held,
    /** Resolves once `n` requests arrived (bounded). */
    async until(n: number, timeoutMs = 20_000): Promise<void> {
      const deadline = Date.now() + timeoutMs;
      while (seen.length < n) {
        if (Date.now() > deadline) throw new Error(`tool server: ${seen.length} of ${n} requests after ${timeoutMs} ms`);
        await new Promise<void>((resolve) => {
          waiters.push(resolve);
          setTimeout(resolve, 500).unref();
        });
      }
    },
    async close(): Promise<void> {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

export interface StreamEvent {
  run: Record<string, any>;
  results: Array<Record<string, any>>;
}

/** Reads the test-run stream until the server closes it; `onEvent` sees each event as it comes. */
export function readRunStream(app: { port: number }, runId: string, token: string, onEvent: (e: StreamEvent) => void = () => {}, timeoutMs = 30_000) {
  return new Promise<{ status: number; events: StreamEvent[] }>((resolve, reject) => {
    const events: StreamEvent[] = [];
    const req = http.get({ host: '127.0.0.1', port: app.port, path: `/api/v1/agents/test-runs/${runId}/stream`, headers: { authorization: `Bearer ${token}` } }, (res) => {
      let buf = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buf += chunk;
        let i: number;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const block = buf.slice(0, i);
          buf = buf.slice(i + 2);
          for (const line of block.split('\n')) {
            if (!line.startsWith('data: ')) continue;
            const ev = JSON.parse(line.slice(6)) as StreamEvent;
            events.push(ev);
            onEvent(ev);
          }
        }
      });
      res.on('end', () => {
        clearTimeout(timer);
        resolve({ status: res.statusCode ?? 0, events });
      });
    });
    const timer = setTimeout(() => {
      req.destroy();
      reject(new Error(`stream of ${runId} still open after ${timeoutMs} ms (${events.length} events)`));
    }, timeoutMs);
    req.on('error', reject);
  });
}

/** An agent of `user`'s workspace on the `sim` LLM (its demo script: a weather tool, echo otherwise). */
export async function simAgent(app: AppRef, user: TestUser, fields: Record<string, unknown> = {}): Promise<string> {
  const created = await api(app, 'POST', '/api/v1/agents', {
    token: user.token,
    body: { workspace_id: user.workspaceId, name: 'Sim agent', system_prompt: 'You are the Acme assistant.', welcome_message: 'Hello, Acme here.', ...fields },
  });
  expect(created.status, JSON.stringify(created.body)).toBe(201);
  const id = created.body.data.id as string;
  const prov = await api(app, 'POST', `/api/v1/agents/${id}/providers`, { token: user.token, body: { provider_type: 'llm', provider_name: 'sim' } });
  expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
  return id;
}

export async function waitForRun(app: AppRef, runId: string, token: string, pred: (run: any) => boolean, timeoutMs = 30_000): Promise<any> {
  let run: any;
  await expect
    .poll(
      async () => {
        run = (await api(app, 'GET', `/api/v1/agents/test-runs/${runId}`, { token })).body.data;
        return pred(run);
      },
      { timeout: timeoutMs, interval: 100 },
    )
    .toBe(true);
  return run;
}
