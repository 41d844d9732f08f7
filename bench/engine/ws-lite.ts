/**
 * A deliberately minimal WebSocket client for the load generator. A thousand `ws` clients sending
 * 50 frames/s each cost more CPU than the engine under test; this one writes frames that were
 * encoded once (header + zero masking key, RFC 6455 5.3: the key is required, its value is not
 * checked by servers) and parses server frames without copying binary payloads it only counts.
 *
 * Not a general client: no extensions, no fragmented server messages (uWS does not fragment),
 * payloads under 64 KiB outbound.
 */
import net from 'node:net';
import { randomBytes } from 'node:crypto';

/** Encodes one client frame (FIN, opcode, mask bit with a zero key) around `payload`. */
export function encodeClientFrame(payload: Uint8Array, opcode: 1 | 2 | 8 | 10 = 2): Buffer {
  const len = payload.length;
  if (len >= 65536) throw new RangeError('ws-lite: payload too large');
  const headerLen = len < 126 ? 6 : 8;
  const out = Buffer.allocUnsafe(headerLen + len);
  out[0] = 0x80 | opcode;
  if (len < 126) {
    out[1] = 0x80 | len;
  } else {
    out[1] = 0x80 | 126;
    out.writeUInt16BE(len, 2);
  }
  out.writeUInt32BE(0, headerLen - 4); // masking key 0: masked bytes equal the payload
  out.set(payload, headerLen);
  return out;
}

export interface WsLiteHandlers {
  /** A binary message; `data` is a view valid only during the call. */
  onBinary?(data: Buffer): void;
  onText?(text: string): void;
  onClose?(code: number): void;
}

export class WsLite {
  private buf: Buffer = Buffer.alloc(0);
  private open = false;
  closed = false;
  closeCode = 0;

  private constructor(
    readonly socket: net.Socket,
    private readonly h: WsLiteHandlers,
  ) {}

  /** Opens `ws://host:port/path` and resolves once the server answered 101. */
  static connect(host: string, port: number, pathAndQuery: string, handlers: WsLiteHandlers, timeoutMs = 15_000): Promise<WsLite> {
    return new Promise((resolve, reject) => {
      const socket = net.connect({ host, port, noDelay: true });
      const c = new WsLite(socket, handlers);
      const timer = setTimeout(() => {
        socket.destroy();
        reject(new Error(`ws-lite: no upgrade from ${pathAndQuery} in ${timeoutMs} ms`));
      }, timeoutMs);
      socket.once('connect', () => {
        socket.write(
          `GET ${pathAndQuery} HTTP/1.1\r\nHost: ${host}:${port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n` +
            `Sec-WebSocket-Key: ${randomBytes(16).toString('base64')}\r\nSec-WebSocket-Version: 13\r\n\r\n`,
        );
      });
      socket.on('data', (chunk: Buffer) => {
        if (c.open) return c.onData(chunk);
        c.buf = c.buf.length ? Buffer.concat([c.buf, chunk]) : chunk;
        const end = c.buf.indexOf('\r\n\r\n');
        if (end < 0) return;
        const head = c.buf.subarray(0, end).toString('latin1');
        const rest = c.buf.subarray(end + 4);
        c.buf = Buffer.alloc(0);
        clearTimeout(timer);
        if (!/^HTTP\/1\.1 101/.test(head)) {
          socket.destroy();
          reject(new Error(`ws-lite: upgrade refused: ${head.split('\r\n')[0]}`));
          return;
        }
        c.open = true;
        resolve(c);
        // Frames that came with the 101 (a server's first event often does) are delivered after
        // the caller's `.then`/`await` has the connection in hand: a handler that answers the first
        // event (e.g. closes on `pipeline_ready`) would otherwise find it still undefined.
        if (rest.length) queueMicrotask(() => c.onData(rest));
      });
      socket.on('error', (err) => {
        clearTimeout(timer);
        if (!c.open) reject(err);
      });
      socket.on('close', () => {
        clearTimeout(timer);
        if (!c.closed) {
          c.closed = true;
          c.h.onClose?.(c.closeCode || 1006);
        }
      });
    });
  }

  /** Writes a frame made by `encodeClientFrame` (shared buffers are fine: nothing mutates them). */
  sendFrame(frame: Buffer): void {
    if (!this.closed) this.socket.write(frame);
  }

  sendText(text: string): void {
    this.sendFrame(encodeClientFrame(Buffer.from(text, 'utf8'), 1));
  }

  close(): void {
    if (this.closed) return;
    this.sendFrame(encodeClientFrame(Buffer.from([0x03, 0xe8]), 8));
    this.socket.end();
    setTimeout(() => this.socket.destroy(), 2000).unref();
  }

  private onData(chunk: Buffer): void {
    let b = this.buf.length ? Buffer.concat([this.buf, chunk]) : chunk;
    let off = 0;
    for (;;) {
      if (b.length - off < 2) break;
      const b0 = b[off]!;
      const b1 = b[off + 1]!;
      let len = b1 & 0x7f;
      let p = off + 2;
      if (len === 126) {
        if (b.length - off < 4) break;
        len = b.readUInt16BE(off + 2);
        p = off + 4;
      } else if (len === 127) {
        if (b.length - off < 10) break;
        len = Number(b.readBigUInt64BE(off + 2));
        p = off + 10;
      }
      if (b1 & 0x80) p += 4; // servers never mask; tolerate it anyway (payload left masked)
      if (b.length < p + len) break;
      const opcode = b0 & 0x0f;
      const payload = b.subarray(p, p + len);
      off = p + len;
      if (opcode === 2) this.h.onBinary?.(payload);
      else if (opcode === 1) this.h.onText?.(payload.toString('utf8'));
      else if (opcode === 8) {
        this.closeCode = len >= 2 ? payload.readUInt16BE(0) : 1005;
        this.closed = true;
        this.h.onClose?.(this.closeCode);
        this.socket.end();
      } else if (opcode === 9) this.socket.write(encodeClientFrame(payload, 10));
    }
    // Keep only the unparsed tail (copied: `chunk` belongs to the socket).
    this.buf = off >= b.length ? Buffer.alloc(0) : Buffer.from(b.subarray(off));
    b = this.buf;
  }
}
