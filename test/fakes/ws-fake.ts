/**
 * Base for the WebSocket vendor fakes: an `http` server on 127.0.0.1:0 whose upgrades go to a
 * `ws` WebSocketServer in noServer mode, so the fake can delay or refuse a handshake with a real
 * HTTP status (401, 429 + Retry-After, 500) the way vendors do. Every connection is recorded.
 */
import { createServer, type IncomingHttpHeaders, type IncomingMessage, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import { FaultInjector, deferred, delay, type Faults } from './faults.js';

export interface WsRecord {
  path: string;
  query: URLSearchParams;
  headers: IncomingHttpHeaders;
  /** Faults taken for this handshake. */
  faults: Faults;
  atMs: number;
  /** 101 when accepted, else the refusal status. */
  status: number;
  /** Text messages received, parsed as JSON when possible. */
  texts: unknown[];
  binaryFrames: number;
  binaryBytes: number;
  /** Resolves when the socket closed (either side). */
  closed: Promise<void>;
  closeCode?: number;
  /** True when the fake ended the connection (idle timeout, CloseStream, fault), false when the client did. */
  closedByServer: boolean;
  socket?: WebSocket;
}

export abstract class WsFake {
  readonly connections: WsRecord[] = [];
  /** Handshake-level faults: slowFirstByteMs delays the 101, status* refuse it. */
  readonly faults = new FaultInjector();
  private server: Server | null = null;
  private readonly wss = new WebSocketServer({ noServer: true, perMessageDeflate: false });
  private baseUrl = '';

  constructor(private readonly path: string) {}

  async start(): Promise<{ url: string }> {
    const server = createServer((_req, res) => {
      res.writeHead(426, { 'content-type': 'text/plain' }).end('upgrade required');
    });
    server.on('upgrade', (req, socket, head) => void this.upgrade(req, socket, head));
    this.server = server;
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    this.baseUrl = `ws://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return { url: this.baseUrl };
  }

  get url(): string {
    return this.baseUrl;
  }

  async close(): Promise<void> {
    for (const c of this.wss.clients) c.terminate();
    this.wss.close();
    const server = this.server;
    this.server = null;
    if (!server) return;
    server.closeAllConnections();
    await new Promise<void>((resolve) => server.close(() => resolve()));
  }

  /** Checks credentials and parameters; returns a refusal `{status, body}` or null to accept. */
  protected abstract authorize(rec: WsRecord): { status: number; body: unknown } | null;
  protected abstract onConnection(rec: WsRecord, ws: WebSocket): void;

  /** Closes from the fake's side (recorded as such). */
  protected serverClose(rec: WsRecord, ws: WebSocket, code?: number, reason?: string): void {
    rec.closedByServer = true;
    if (code === undefined) ws.terminate();
    else ws.close(code, reason);
  }

  private async upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): Promise<void> {
    const u = new URL(req.url ?? '/', 'http://fake');
    const closed = deferred();
    const rec: WsRecord = {
      path: u.pathname,
      query: u.searchParams,
      headers: req.headers,
      faults: this.faults.take(),
      atMs: performance.now(),
      status: 0,
      texts: [],
      binaryFrames: 0,
      binaryBytes: 0,
      closed: closed.promise,
      closedByServer: false,
    };
    this.connections.push(rec);
    socket.on('error', () => undefined);
    // Accepted sockets resolve from ws's 'close' (which carries the close code, and fires later).
    socket.on('close', () => rec.status !== 101 && closed.resolve());
    const f = rec.faults;
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (socket.destroyed) return;
    if (u.pathname !== this.path) return this.refuse(rec, socket, 404, { err_msg: 'not found' });
    if (f.status429RetryAfterS !== undefined)
      return this.refuse(rec, socket, 429, { err_code: 'TOO_MANY_REQUESTS', err_msg: 'Too many requests' }, { 'Retry-After': String(f.status429RetryAfterS) });
    if (f.status500) return this.refuse(rec, socket, 500, { err_code: 'INTERNAL', err_msg: 'internal error' });
    const refusal = this.authorize(rec);
    if (refusal) return this.refuse(rec, socket, refusal.status, refusal.body);
    this.wss.handleUpgrade(req, socket, head, (ws) => {
      rec.status = 101;
      rec.socket = ws;
      ws.on('close', (code) => {
        rec.closeCode = code;
        closed.resolve();
      });
      ws.on('message', (data, isBinary) => {
        if (isBinary) {
          rec.binaryFrames++;
          rec.binaryBytes += (data as Buffer).length;
          return;
        }
        const text = data.toString();
        try {
          rec.texts.push(JSON.parse(text));
        } catch {
          rec.texts.push(text);
        }
      });
      this.onConnection(rec, ws);
    });
  }

  private refuse(rec: WsRecord, socket: Duplex, status: number, body: unknown, headers: Record<string, string> = {}): void {
    rec.status = status;
    rec.closedByServer = true;
    const json = JSON.stringify(body);
    const extra = Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('');
    socket.end(
      `HTTP/1.1 ${status} Refused\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(json)}\r\n${extra}Connection: close\r\n\r\n${json}`,
    );
  }
}
