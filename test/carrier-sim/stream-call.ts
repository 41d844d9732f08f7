/**
 * The carrier's side of one Plivo, Vonage or Exotel media stream, as a WebSocket client of the
 * engine: the same model as `MediaStreamCall` (Twilio), on each carrier's wire:
 *
 * - plivo: `start` (session in `extra_headers`), `media` every 20 ms (mu-law 8 kHz base64, chunk,
 *   epoch-ms timestamp); plays `playAudio`, echoes `checkpoint` as `playedStream` once the audio
 *   before it has played, `clearAudio` drops queued audio (pending checkpoints are dropped, not
 *   echoed) and answers `clearedAudio`; `dtmf` on demand; `stop` on hang-up.
 * - vonage: `websocket:connected` (content-type audio/l16 at the rate the NCCO asked for, 8000 or
 *   16000, and the NCCO's headers), then binary frames every 20 ms (320 or 640 bytes); plays binary audio, echoes `notify` as `websocket:notify`,
 *   `clear` drops queued audio and answers `websocket:cleared`; `websocket:dtmf`; hang-up closes.
 * - exotel: `connected`, `start` (custom_parameters), `media` every 100 ms (5 frames of 8 kHz
 *   16-bit PCM, base64), plays `media`, echoes `mark`s, `clear` drops queued audio and echoes the
 *   pending marks (like Twilio); `dtmf`; `stop` on hang-up.
 *
 * Sent messages go through an `ImpairedLink` (jitter, reordering, loss). Played audio is decoded
 * with `SimDecoder` at the wire's rate, so `heard` holds what the callee heard.
 */
import WebSocket from 'ws';
import { mulawDecode, mulawEncode } from '../../media-engine/audio/g711.js';
import { encodeText, SimDecoder } from '../../shared/providers/sim/codec.js';
import { ImpairedLink, type LinkOptions } from './link.js';
import type { MediaCallEvent } from './media-call.js';
import { sharedTicker, type Ticker } from './ticker.js';

export type StreamWireName = 'plivo' | 'vonage' | 'exotel';

export interface StreamCallOptions {
  wire: StreamWireName;
  /** The stream URL from the carrier's call-control document. */
  url: string;
  callId: string;
  /** Plivo extraHeaders / Vonage headers / Exotel custom parameters. */
  params: Record<string, string>;
  /** Vonage: the rate of the NCCO's content-type (default 8000); the others are 8 kHz. */
  rate?: 8000 | 16000;
  link?: LinkOptions;
  ticker?: Ticker;
}

const FRAME_MS = 20;
const BATCH = Number(process.env.EXOTEL_SIM_BATCH ?? 5);
/** Binary frames travel the (string) link as base64 behind this marker. */
const BIN = '\u0000bin:';

export class CarrierStreamCall {
  readonly streamId: string;
  readonly heard: string[] = [];
  readonly events: MediaCallEvent[] = [];
  readonly link: ImpairedLink;
  readonly rate: 8000 | 16000;
  mediaReceived = 0;
  framesPlayed = 0;
  clears = 0;
  closeCode?: number;
  private ws!: WebSocket;
  private readonly samples: number;
  private seq = 0;
  private frameNo = 0;
  private t0 = -1;
  private epochMs = Date.now();
  private mouth: Int16Array[] = [];
  private mouthOffset = 0;
  private queuedFrames = 0;
  private speechWaiters: Array<{ untilFrame: number; resolve: () => void }> = [];
  /** Exotel: frames of the 100 ms message being filled. */
  private outBatch: Int16Array[] = [];
  /** Playout queue: PCM chunks and mark names in arrival order. */
  private playout: Array<Int16Array | string> = [];
  private playoutOffset = 0;
  private readonly decoder: SimDecoder;
  private readonly frame: Int16Array;
  private stopped = false;
  private playing = false;
  private readonly ticker: Ticker;
  private readonly tick = () => this.onTick();
  private closedP!: Promise<number>;
  private waiters: Array<{ pred: () => boolean; resolve: () => void }> = [];

  constructor(readonly o: StreamCallOptions) {
    this.rate = o.wire === 'vonage' ? (o.rate ?? 8000) : 8000;
    this.samples = (this.rate * FRAME_MS) / 1000;
    this.frame = new Int16Array(this.samples);
    this.decoder = new SimDecoder(this.rate);
    this.streamId = o.wire === 'exotel' ? `MZ${hex(32)}` : `${hex(8)}-${hex(4)}-${hex(4)}-${hex(4)}-${hex(12)}`;
    this.link = new ImpairedLink(o.link);
    this.ticker = o.ticker ?? sharedTicker();
  }

  async connect(): Promise<void> {
    this.ws = new WebSocket(this.o.url);
    this.closedP = new Promise((resolve) => {
      this.ws.on('close', (code) => {
        this.closeCode = code;
        this.stopped = true;
        this.ticker.remove(this.tick);
        this.note('closed', String(code));
        this.checkWaiters();
        resolve(code);
      });
    });
    this.ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary));
    await new Promise<void>((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    const { wire } = this.o;
    if (wire === 'plivo') {
      const extra = Object.entries(this.o.params).map(([k, v]) => `${k}=${v}`).join(',');
      this.send({ event: 'start', sequenceNumber: this.seq++, start: { callId: this.o.callId, streamId: this.streamId, accountId: 'MA0000000000000000', tracks: ['inbound'], mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000 } }, extra_headers: extra });
    } else if (wire === 'vonage') {
      this.send({ event: 'websocket:connected', 'content-type': `audio/l16;rate=${this.rate}`, ...this.o.params });
    } else {
      this.send({ event: 'connected' });
      this.send({ event: 'start', sequence_number: String(++this.seq), stream_sid: this.streamId, start: { stream_sid: this.streamId, call_sid: this.o.callId, account_sid: 'exo', from: '+919800000000', to: '+918000000000', custom_parameters: this.o.params, media_format: { encoding: 'base64', sample_rate: '8000', bit_rate: '128kbps' } } });
    }
    this.t0 = performance.now();
    this.ticker.add(this.tick);
  }

  /** Speaks `text` (sim code); resolves when its last frame has left the carrier. */
  say(text: string): Promise<void> {
    const pcm = encodeText(text, this.rate);
    this.mouth.push(pcm);
    this.queuedFrames += Math.ceil(pcm.length / this.samples);
    const untilFrame = this.frameNo + this.queuedFrames;
    return new Promise((resolve) => this.speechWaiters.push({ untilFrame, resolve }));
  }

  /** A key press on the caller's phone. */
  pressDigit(digit: string): void {
    if (this.o.wire === 'plivo') this.send({ event: 'dtmf', sequenceNumber: this.seq++, streamId: this.streamId, dtmf: { digit, track: 'inbound' } });
    else if (this.o.wire === 'vonage') this.send({ event: 'websocket:dtmf', digit, duration: 200 });
    else this.send({ event: 'dtmf', sequence_number: String(++this.seq), stream_sid: this.streamId, dtmf: { digit, duration: '200' } });
  }

  hangup(): void {
    if (this.stopped) return;
    this.stopped = true;
    if (this.o.wire === 'plivo') this.send({ event: 'stop', sequenceNumber: this.seq++, streamId: this.streamId });
    if (this.o.wire === 'exotel') this.send({ event: 'stop', sequence_number: String(++this.seq), stream_sid: this.streamId, stop: { call_sid: this.o.callId, reason: 'callended' } });
    this.note('stop');
    this.ws.close(1000);
  }

  closed(): Promise<number> {
    return this.closedP;
  }

  get isOpen(): boolean {
    return !this.stopped && this.ws?.readyState === WebSocket.OPEN;
  }

  waitUntil(pred: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} not met within ${timeoutMs} ms; heard ${JSON.stringify(this.heard)}; engine frames ${this.mediaReceived}, played ${this.framesPlayed}, clears ${this.clears}, events ${this.events.map((e) => e.kind + '@' + Math.round(e.atMs)).join(",")}`)), timeoutMs);
      this.waiters.push({ pred, resolve: () => (clearTimeout(timer), resolve()) });
    });
  }

  get audioQueued(): boolean {
    return this.playout.some((x) => typeof x !== 'string');
  }

  // ------------------------------------------------------------------ from the engine

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      if (this.o.wire !== 'vonage') throw new Error(`${this.o.wire} sim: binary frame from the engine`);
      this.mediaReceived++;
      this.playout.push(pcmFromLE(data));
      return this.checkWaiters();
    }
    const msg = JSON.parse(data.toString('utf8')) as Record<string, any>;
    const kind = this.o.wire === 'vonage' ? msg.action : msg.event;
    if ((kind === 'playAudio' || kind === 'media') && msg.media?.payload) {
      const bytes = Buffer.from(msg.media.payload, 'base64');
      // 20 ms frames (a message may carry several): 160 bytes of mu-law, 320 of 8 kHz L16.
      this.mediaReceived += Math.max(1, Math.round(bytes.length / (this.o.wire === 'plivo' ? 160 : 320)));
      if (this.o.wire === 'plivo') {
        const pcm = new Int16Array(bytes.length);
        mulawDecode(bytes, pcm);
        this.playout.push(pcm);
      } else {
        this.playout.push(pcmFromLE(bytes));
      }
    } else if (kind === 'checkpoint' || kind === 'mark' || kind === 'notify') {
      const name = kind === 'checkpoint' ? msg.name : kind === 'mark' ? msg.mark?.name : msg.payload?.mark;
      this.note('mark_sent', name);
      this.playout.push(String(name));
      this.echoDueMarks();
    } else if (kind === 'clearAudio' || kind === 'clear') {
      this.clears++;
      this.note('clear');
      this.decoder.flush();
      for (const ev of this.decoder.takeEvents()) if (ev.type === 'final') this.heard.push(ev.text);
      const marks = this.playout.filter((x): x is string => typeof x === 'string');
      this.playout = [];
      this.playoutOffset = 0;
      this.playing = false;
      if (this.o.wire === 'exotel') for (const m of marks) this.echoMark(m);
      if (this.o.wire === 'plivo') this.send({ event: 'clearedAudio', sequenceNumber: this.seq++, streamId: this.streamId });
      if (this.o.wire === 'vonage') this.send({ event: 'websocket:cleared' });
    }
    this.checkWaiters();
  }

  // ------------------------------------------------------------------ clock

  private onTick(): void {
    if (this.stopped || this.t0 < 0) return;
    const now = performance.now();
    const due = Math.floor((now - this.t0) / FRAME_MS) + 1;
    while (this.frameNo < due) {
      this.frameNo++;
      this.sendFrame(now);
      this.playFrame();
    }
    for (const m of this.link.due(now)) {
      if (this.ws.readyState !== WebSocket.OPEN) break;
      if (m.startsWith(BIN)) this.ws.send(Buffer.from(m.slice(BIN.length), 'base64'), { binary: true });
      else this.ws.send(m);
    }
    this.checkWaiters();
  }

  private nextMouthFrame(): Int16Array {
    const f = new Int16Array(this.samples);
    if (!this.mouth.length) return f;
    const src = this.mouth[0]!;
    const n = Math.min(this.samples, src.length - this.mouthOffset);
    f.set(src.subarray(this.mouthOffset, this.mouthOffset + n));
    this.mouthOffset += n;
    if (this.mouthOffset >= src.length) {
      this.mouth.shift();
      this.mouthOffset = 0;
    }
    this.queuedFrames--;
    return f;
  }

  private sendFrame(now: number): void {
    const f = this.nextMouthFrame();
    const n = this.frameNo;
    if (this.o.wire === 'plivo') {
      const mu = new Uint8Array(this.samples);
      mulawEncode(f, mu);
      this.link.offer(JSON.stringify({ event: 'media', sequenceNumber: this.seq++, streamId: this.streamId, media: { track: 'inbound', timestamp: String(this.epochMs + (n - 1) * FRAME_MS), chunk: n, payload: Buffer.from(mu).toString('base64') } }), now);
    } else if (this.o.wire === 'vonage') {
      this.link.offer(BIN + Buffer.from(leFromPcm(f)).toString('base64'), now);
    } else {
      this.outBatch.push(f);
      if (this.outBatch.length === BATCH) {
        const pcm = new Int16Array(this.samples * BATCH);
        this.outBatch.forEach((x, i) => pcm.set(x, i * this.samples));
        const chunk = n / BATCH;
        this.outBatch = [];
        this.link.offer(JSON.stringify({ event: 'media', sequence_number: String(++this.seq), stream_sid: this.streamId, media: { chunk: String(chunk), timestamp: String((chunk - 1) * 20 * BATCH), payload: Buffer.from(leFromPcm(pcm)).toString('base64') } }), now);
      }
    }
    this.speechWaiters = this.speechWaiters.filter((w) => (this.frameNo < w.untilFrame ? true : (w.resolve(), false)));
  }

  /** One 20 ms step of the virtual playout clock. */
  private playFrame(): void {
    this.echoDueMarks();
    let filled = 0;
    this.frame.fill(0);
    while (filled < this.samples && this.playout.length && typeof this.playout[0] !== 'string') {
      const chunk = this.playout[0] as Int16Array;
      const n = Math.min(this.samples - filled, chunk.length - this.playoutOffset);
      this.frame.set(chunk.subarray(this.playoutOffset, this.playoutOffset + n), filled);
      filled += n;
      this.playoutOffset += n;
      if (this.playoutOffset >= chunk.length) {
        this.playout.shift();
        this.playoutOffset = 0;
      }
    }
    if (filled === 0) {
      this.playing = false;
    } else {
      if (!this.playing) {
        this.playing = true;
        this.note('audio_start');
      }
      this.framesPlayed++;
    }
    this.decoder.push(this.frame);
    for (const ev of this.decoder.takeEvents()) {
      if (ev.type === 'final') {
        this.heard.push(ev.text);
        this.note('heard', ev.text);
      }
    }
    this.echoDueMarks();
  }

  private echoDueMarks(): void {
    while (this.playout.length && typeof this.playout[0] === 'string') this.echoMark(this.playout.shift() as string);
  }

  private echoMark(name: string): void {
    this.note('mark_echoed', name);
    if (this.o.wire === 'plivo') this.send({ event: 'playedStream', sequenceNumber: this.seq++, streamId: this.streamId, name });
    else if (this.o.wire === 'vonage') this.send({ event: 'websocket:notify', payload: { mark: name } });
    else this.send({ event: 'mark', sequence_number: String(++this.seq), stream_sid: this.streamId, mark: { name } });
  }

  private send(msg: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  private note(kind: MediaCallEvent['kind'], detail?: string): void {
    this.events.push({ kind, atMs: performance.now(), detail });
  }

  private checkWaiters(): void {
    if (this.waiters.length === 0) return;
    this.waiters = this.waiters.filter((w) => (w.pred() ? (w.resolve(), false) : true));
  }
}

function pcmFromLE(b: Uint8Array): Int16Array {
  const out = new Int16Array(b.length >> 1);
  for (let i = 0; i < out.length; i++) out[i] = ((b[2 * i + 1]! << 8) | b[2 * i]!) << 16 >> 16;
  return out;
}

function leFromPcm(p: Int16Array): Uint8Array {
  const out = new Uint8Array(p.length * 2);
  for (let i = 0; i < p.length; i++) {
    out[2 * i] = p[i]! & 0xff;
    out[2 * i + 1] = (p[i]! >> 8) & 0xff;
  }
  return out;
}

function hex(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}
