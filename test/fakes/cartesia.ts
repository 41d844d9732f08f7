/**
 * Wire-faithful fake of Cartesia's TTS WebSocket (`/tts/websocket`, headers `X-API-Key` and
 * `Cartesia-Version`), after the message examples in docs.cartesia.ai/api-reference/tts/websocket:
 * a generation request per `context_id` -> `{"type":"chunk","data":<b64>,"done":false,
 * "status_code":206,"step_time",…,"context_id"}`… then `{"type":"done","done":true,…}`;
 * `{"context_id","cancel":true}` stops a context; errors are `{"type":"error","done":true,
 * "status_code","title","message","error_code","context_id"}`. Audio is sim-coded raw pcm_s16le.
 *
 * Two fault injectors: `faults` (inherited) acts on the handshake; `requestFaults` on each
 * generation request (slow first chunk, in-band 429/500 errors, malformed message, socket drop).
 */
import type { WebSocket } from 'ws';
import { encodeText } from '../../shared/providers/sim/codec.js';
import { int16ToBytes } from '../../shared/providers/tts/pcm-bytes.js';
import { FaultInjector, delay, type Faults } from './faults.js';
import { WsFake, type WsRecord } from './ws-fake.js';

export interface CartesiaGeneration {
  contextId: string;
  request: Record<string, any>;
  faults: Faults;
  chunksSent: number;
  /** True when the client cancelled before the fake finished. */
  cancelled: boolean;
  done: boolean;
}

export class CartesiaFake extends WsFake {
  readonly apiKey: string;
  readonly requestFaults = new FaultInjector();
  readonly generations: CartesiaGeneration[] = [];
  /** Raw bytes per chunk (even: Cartesia sends whole samples). */
  chunkBytes = 4000;
  /** Pause between chunks so cancel tests can act mid-stream. */
  chunkDelayMs = 0;

  constructor(opts: { apiKey?: string } = {}) {
    super('/tts/websocket');
    this.apiKey = opts.apiKey ?? 'test-cartesia-key';
  }

  protected authorize(rec: WsRecord): { status: number; body: unknown } | null {
    if (rec.headers['x-api-key'] !== this.apiKey) return { status: 401, body: { error: 'Invalid API key' } };
    if (!rec.headers['cartesia-version']) return { status: 400, body: { error: 'Cartesia-Version header is required' } };
    return null;
  }

  protected onConnection(rec: WsRecord, ws: WebSocket): void {
    const active = new Map<string, CartesiaGeneration>();
    ws.on('message', (data, isBinary) => {
      if (isBinary) return;
      let msg: Record<string, any>;
      try {
        msg = JSON.parse(data.toString()) as Record<string, any>;
      } catch {
        return this.send(ws, { type: 'error', done: true, status_code: 400, title: 'Invalid JSON', message: 'invalid json', error_code: 'invalid_request' });
      }
      const id = String(msg.context_id ?? '');
      if (msg.cancel === true) {
        const g = active.get(id);
        if (g) g.cancelled = true;
        active.delete(id);
        return;
      }
      const g: CartesiaGeneration = { contextId: id, request: msg, faults: this.requestFaults.take(), chunksSent: 0, cancelled: false, done: false };
      this.generations.push(g);
      active.set(id, g);
      void this.generate(rec, ws, g, active);
    });
  }

  private send(ws: WebSocket, msg: unknown): boolean {
    if (ws.readyState !== ws.OPEN) return false;
    ws.send(JSON.stringify(msg));
    return true;
  }

  private async generate(rec: WsRecord, ws: WebSocket, g: CartesiaGeneration, active: Map<string, CartesiaGeneration>): Promise<void> {
    const { request: r, faults: f, contextId } = g;
    const fail = (status: number, title: string, errorCode: string): void => {
      active.delete(contextId);
      this.send(ws, { type: 'error', done: true, status_code: status, title, message: title, error_code: errorCode, context_id: contextId });
    };
    const fmt = r.output_format ?? {};
    const rate = fmt.sample_rate as number;
    if (!r.model_id || !r.voice?.id || !contextId || typeof r.transcript !== 'string')
      return fail(400, 'Invalid request', 'invalid_request');
    if (fmt.container !== 'raw' || fmt.encoding !== 'pcm_s16le' || ![8000, 16000, 24000].includes(rate))
      return fail(400, 'Unsupported output format (fake)', 'invalid_output_format');
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (f.status429RetryAfterS !== undefined) return fail(429, 'Rate limited', 'rate_limited');
    if (f.status500) return fail(500, 'Internal error', 'internal_error');
    const audio = int16ToBytes(encodeText(r.transcript, rate as 8000 | 16000 | 24000));
    for (let off = 0; off < audio.length; off += this.chunkBytes) {
      if (!active.has(contextId)) return; // cancelled
      const data = audio.subarray(off, off + this.chunkBytes).toString('base64');
      if (!this.send(ws, { type: 'chunk', data, done: false, status_code: 206, step_time: 12, context_id: contextId })) return;
      g.chunksSent++;
      if (g.chunksSent === 1 && f.disconnectMidStream) {
        await delay(5);
        return this.serverClose(rec, ws);
      }
      if (g.chunksSent === 1 && f.malformedChunk) ws.send(typeof f.malformedChunk === 'string' ? f.malformedChunk : '{"type":"chunk","data":');
      await (this.chunkDelayMs > 0 ? delay(this.chunkDelayMs) : new Promise((res) => setImmediate(res)));
    }
    if (!active.has(contextId)) return;
    active.delete(contextId);
    g.done = true;
    this.send(ws, { type: 'done', done: true, status_code: 206, context_id: contextId });
  }
}
