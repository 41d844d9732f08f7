/**
 * Base for the HTTP vendor fakes: a real `http` server on 127.0.0.1:0 that records every request
 * (so tests can count attempts and see client-side closes) and hands it to the vendor handler.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { FaultInjector, deferred, type Faults } from './faults.js';

export interface HttpRecord {
  method: string;
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  rawBody: string;
  /** The body's bytes (multipart uploads: `rawBody` is its UTF-8 reading, lossy for binary parts). */
  rawBytes: Buffer;
  /** Parsed JSON body, or undefined when the body is not JSON. */
  body: any;
  faults: Faults;
  /** Client port: equal ports on two requests mean the keep-alive connection was reused. */
  remotePort?: number;
  /** Arrival time (ms, monotonic) so tests can measure retry spacing. */
  atMs: number;
  status?: number;
  /** Resolves when the response's connection closed; `clientClosedEarly` then says who ended it. */
  closed: Promise<void>;
  /** True when the client went away before the fake finished its response (abort, timeout). */
  clientClosedEarly: boolean;
}

export abstract class HttpFake {
  readonly requests: HttpRecord[] = [];
  readonly faults = new FaultInjector();
  /** Pause between streamed chunks, so abort tests can act mid-stream. */
  chunkDelayMs = 0;
  private server: Server | null = null;
  private baseUrl = '';

  async start(): Promise<{ url: string }> {
    const server = createServer((req, res) => void this.receive(req, res));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const { port } = server.address() as AddressInfo;
    this.baseUrl = `http://127.0.0.1:${port}`;
    return { url: this.baseUrl };
  }

  get url(): string {
    return this.baseUrl;
  }

  async close(): Promise<void> {
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  protected abstract handle(rec: HttpRecord, req: IncomingMessage, res: ServerResponse): Promise<void>;

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const rawBytes = Buffer.concat(chunks);
    const rawBody = rawBytes.toString('utf8');
    let body: unknown;
    try {
      body = rawBody ? JSON.parse(rawBody) : undefined;
    } catch {
      body = undefined;
    }
    const u = new URL(req.url ?? '/', 'http://fake');
    const closed = deferred();
    const rec: HttpRecord = {
      method: req.method ?? 'GET',
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      rawBody,
      rawBytes,
      body,
      faults: this.faults.take(),
      remotePort: req.socket.remotePort,
      atMs: performance.now(),
      closed: closed.promise,
      clientClosedEarly: false,
    };
    this.requests.push(rec);
    res.on('close', () => {
      rec.clientClosedEarly = !res.writableFinished;
      closed.resolve();
    });
    try {
      await this.handle(rec, req, res);
    } catch (e) {
      if (!res.headersSent) this.sendJson(rec, res, 500, { error: { message: String(e), type: 'fake_crash' } });
      else res.destroy();
    }
  }

  protected sendJson(rec: HttpRecord, res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
    rec.status = status;
    res.writeHead(status, { 'content-type': 'application/json', ...headers });
    res.end(JSON.stringify(body));
  }

  /** Writes one chunk unless the client is gone; false when it is. */
  protected write(res: ServerResponse, chunk: string | Uint8Array): boolean {
    if (res.destroyed || res.writableEnded) return false;
    res.write(chunk);
    return true;
  }

  protected async pause(): Promise<void> {
    if (this.chunkDelayMs > 0) await new Promise((r) => setTimeout(r, this.chunkDelayMs));
    else await new Promise((r) => setImmediate(r));
  }
}
