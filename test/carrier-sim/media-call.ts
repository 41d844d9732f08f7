/**
 * The carrier's side of one media stream, as a WebSocket client of the engine, in the dialect of
 * a carrier (`dialect`: Twilio Media Streams, docs/protocols.md section 1, also SignalWire's; or
 * Telnyx media streaming: `stream_id` / `sequence_number` / `media.chunk`, PCMU or PCMA,
 * `{"event":"clear"}`). The Twilio dialect: `connected`, `start` (customParameters from the TwiML), then a `media` frame every
 * 20 ms (string counters) carrying the caller's voice: `sim`-coded speech from `say()` encoded to
 * mu-law, else mu-law silence, through an `ImpairedLink`. What the engine sends is played on a
 * virtual playout clock in real time: `mark`s are echoed when the audio queued before them has
 * played, `clear` drops queued audio and echoes pending marks at once. Played audio is decoded
 * with `SimDecoder(8000)`, so `heard` holds what the callee heard.
 */
import WebSocket from 'ws';
import { alawDecode, alawEncode, mulawDecode, mulawEncode, MULAW_SILENCE } from '../../media-engine/audio/g711.js';
import { encodeText, SimDecoder } from '../../shared/providers/sim/codec.js';
import { ImpairedLink, type LinkOptions } from './link.js';
import { sharedTicker, type Ticker } from './ticker.js';

export interface MediaCallOptions {
  /** The stream URL from the TwiML (`ws://node/api/v1/voice/ws/twilio/<id>`). */
  url: string;
  callSid: string;
  accountSid: string;
  customParameters: Record<string, string>;
  link?: LinkOptions;
  ticker?: Ticker;
  /** Frame shapes of this carrier. Default `twilio`. */
  dialect?: 'twilio' | 'telnyx';
  /** Telnyx only: the call's codec (Twilio is always mu-law). Default `pcmu`. */
  codec?: 'pcmu' | 'pcma';
  /** Keep every received payload in `mediaBytes` (tests that analyse the agent's audio). */
  keepMedia?: boolean;
  /**
   * 20 ms frames of the caller's audio per `media` message (default 1). Twilio does not promise
   * 20 ms ("Size is not promised"): with k > 1 one message of k x 160 bytes goes every k x 20 ms,
   * `chunk` counting messages and `timestamp` the media time of its first byte.
   */
  framesPerMessage?: number;
}

export interface MediaCallEvent {
  kind: 'clear' | 'mark_sent' | 'mark_echoed' | 'heard' | 'stop' | 'closed' | 'audio_start';
  atMs: number;
  detail?: string;
}

const FRAME_MS = 20;
const FRAME_BYTES = 160;

export class MediaStreamCall {
  readonly streamSid: string;
  readonly heard: string[] = [];
  /** Every mu-law payload the engine sent, as received (only with `keepMedia`). */
  readonly mediaBytes: Uint8Array[] = [];
  readonly events: MediaCallEvent[] = [];
  readonly link: ImpairedLink;
  /** Every engine media message: performance.now() on arrival and its payload bytes (timing analysis). */
  readonly mediaArrivals: Array<[atMs: number, bytes: number]> = [];
  /** 20 ms frames of engine audio received (a message may carry several) / played; binary frames (a protocol violation) received. */
  mediaReceived = 0;
  framesPlayed = 0;
  binaryReceived = 0;
  clears = 0;
  closeCode?: number;
  /** The carrier side ended the stream (`hangup()` / `stopStream()`), not the engine. */
  closedByCarrier = false;
  /** performance.now() when `start` was sent. */
  connectedAtMs = 0;
  private ws!: WebSocket;
  private seq = 0;
  private chunk = 0;
  /** Messages sent, and the frames of the one being gathered (framesPerMessage > 1). */
  private messages = 0;
  private gathered: Uint8Array[] = [];
  private readonly framesPerMessage: number;
  private t0 = -1;
  private mouth: Uint8Array[] = [];
  private mouthOffset = 0;
  private speechWaiters: Array<{ untilChunk: number; resolve: () => void }> = [];
  private queuedChunks = 0;
  /** Playout queue: audio chunks and marks in arrival order. */
  private playout: Array<Uint8Array | string> = [];
  private playoutOffset = 0;
  private readonly decoder = new SimDecoder(8000);
  private readonly pcm = new Int16Array(FRAME_BYTES);
  private readonly frame = new Uint8Array(FRAME_BYTES);
  private readonly silence: Uint8Array;
  private readonly telnyx: boolean;
  private readonly alaw: boolean;
  private stopped = false;
  private readonly ticker: Ticker;
  private readonly tick = () => this.onTick();
  private closedP!: Promise<number>;
  private waiters: Array<{ pred: () => boolean; resolve: () => void }> = [];
  private playing = false;

  constructor(readonly o: MediaCallOptions) {
    this.telnyx = o.dialect === 'telnyx';
    this.alaw = this.telnyx && o.codec === 'pcma';
    this.silence = new Uint8Array(FRAME_BYTES).fill(this.alaw ? 0xd5 : MULAW_SILENCE);
    this.framesPerMessage = Math.max(1, Math.floor(o.framesPerMessage ?? 1));
    this.streamSid = this.telnyx ? `${randomHex(8)}-${randomHex(4)}-${randomHex(4)}-${randomHex(4)}-${randomHex(12)}` : `MZ${randomHex(32)}`;
    this.link = new ImpairedLink(o.link);
    this.ticker = o.ticker ?? sharedTicker();
  }

  /** Opens the socket and sends `connected` and `start`; media starts on the next tick. */
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
    if (this.telnyx) {
      this.send({ event: 'connected', version: '1.0.0' });
      this.send({
        event: 'start',
        sequence_number: String(++this.seq),
        stream_id: this.streamSid,
        start: {
          user_id: randomHex(8),
          call_control_id: this.o.callSid,
          call_session_id: randomHex(16),
          media_format: { encoding: this.alaw ? 'PCMA' : 'PCMU', sample_rate: 8000, channels: 1 },
          ...(Object.keys(this.o.customParameters).length ? { custom_parameters: this.o.customParameters } : {}),
        },
      });
      this.t0 = this.connectedAtMs = performance.now();
      this.ticker.add(this.tick);
      return;
    }
    this.send({ event: 'connected', protocol: 'Call', version: '1.0.0' });
    this.send({
      event: 'start',
      sequenceNumber: String(++this.seq),
      streamSid: this.streamSid,
      start: {
        streamSid: this.streamSid,
        accountSid: this.o.accountSid,
        callSid: this.o.callSid,
        tracks: ['inbound'],
        customParameters: this.o.customParameters,
        mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 },
      },
    });
    this.t0 = this.connectedAtMs = performance.now();
    this.ticker.add(this.tick);
  }

  /** Speaks `text` (sim code) into the call; resolves when its last frame has left the carrier. */
  say(text: string): Promise<void> {
    const pcm = encodeText(text, 8000);
    const bytes = new Uint8Array(pcm.length);
    if (this.alaw) alawEncode(pcm, bytes);
    else mulawEncode(pcm, bytes);
    this.mouth.push(bytes);
    this.queuedChunks += Math.ceil(bytes.length / FRAME_BYTES);
    const untilChunk = this.chunk + this.queuedChunks;
    return new Promise((resolve) => this.speechWaiters.push({ untilChunk, resolve }));
  }

  /** The caller hangs up: `stop`, then the socket closes. */
  hangup(): void {
    if (this.stopped) return;
    this.stopped = true;
    this.closedByCarrier = true;
    if (this.telnyx) this.send({ event: 'stop', sequence_number: String(++this.seq), stream_id: this.streamSid, stop: { call_control_id: this.o.callSid } });
    else this.send({ event: 'stop', sequenceNumber: String(++this.seq), streamSid: this.streamSid, stop: { accountSid: this.o.accountSid, callSid: this.o.callSid } });
    this.note('stop');
    this.ws.close(1000);
  }

  /** The caller presses a key (a `dtmf` frame, sent at once, beside the media). */
  pressDigit(digit: string): void {
    if (this.telnyx) this.send({ event: 'dtmf', sequence_number: String(++this.seq), stream_id: this.streamSid, occurred_at: new Date().toISOString(), dtmf: { digit } });
    else this.send({ event: 'dtmf', sequenceNumber: String(++this.seq), streamSid: this.streamSid, dtmf: { track: 'inbound_track', digit } });
  }

  /** The carrier ends the stream without hanging up (a transfer or a redirect): `stop`, socket closed. */
  stopStream(): void {
    this.hangup();
  }

  closed(): Promise<number> {
    return this.closedP;
  }

  get isOpen(): boolean {
    return !this.stopped && this.ws?.readyState === WebSocket.OPEN;
  }

  /** Resolves once `pred()` holds (checked after every event and tick). */
  waitUntil(pred: () => boolean, timeoutMs: number, what = 'condition'): Promise<void> {
    if (pred()) return Promise.resolve();
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`${what} not met within ${timeoutMs} ms; heard ${JSON.stringify(this.heard)}`)), timeoutMs);
      this.waiters.push({
        pred,
        resolve: () => {
          clearTimeout(timer);
          resolve();
        },
      });
    });
  }

  /** Whether engine audio is currently playing (queued and not yet played). */
  get audioQueued(): boolean {
    return this.playout.some((x) => typeof x !== 'string');
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (isBinary) {
      // Twilio rejects binary frames (warning 31950): count them so tests can assert there are none.
      this.binaryReceived++;
      return;
    }
    const msg = JSON.parse(data.toString('utf8')) as { event: string; media?: { payload: string }; mark?: { name: string } };
    if (msg.event === 'media' && msg.media) {
      const bytes = new Uint8Array(Buffer.from(msg.media.payload, 'base64'));
      this.mediaReceived += Math.max(1, Math.round(bytes.length / 160));
      this.mediaArrivals.push([performance.now(), bytes.length]);
      if (this.o.keepMedia) this.mediaBytes.push(bytes);
      this.playout.push(bytes);
    } else if (msg.event === 'mark' && msg.mark) {
      this.note('mark_sent', msg.mark.name);
      this.playout.push(msg.mark.name);
      this.echoDueMarks();
    } else if (msg.event === 'clear') {
      this.clears++;
      this.note('clear');
      // A hard cut in what the callee hears: end the phrase in progress so the next one decodes cleanly.
      this.decoder.flush();
      for (const ev of this.decoder.takeEvents()) if (ev.type === 'final') this.heard.push(ev.text);
      // Drop queued audio at once; every pending mark is echoed (for audio that was dropped).
      const marks = this.playout.filter((x): x is string => typeof x === 'string');
      this.playout = [];
      this.playoutOffset = 0;
      this.playing = false;
      for (const m of marks) this.echoMark(m);
    }
    this.checkWaiters();
  }

  private onTick(): void {
    if (this.stopped || this.t0 < 0) return;
    const now = performance.now();
    const due = Math.floor((now - this.t0) / FRAME_MS) + 1;
    while (this.chunk < due) {
      this.chunk++;
      this.sendFrame(now);
      this.playFrame();
    }
    for (const m of this.link.due(now)) if (this.ws.readyState === WebSocket.OPEN) this.ws.send(m);
    this.checkWaiters();
  }

  private sendFrame(now: number): void {
    let bytes = this.silence;
    if (this.mouth.length) {
      const src = this.mouth[0]!;
      const n = Math.min(FRAME_BYTES, src.length - this.mouthOffset);
      this.frame.set(src.subarray(this.mouthOffset, this.mouthOffset + n));
      if (n < FRAME_BYTES) this.frame.fill(this.silence[0]!, n);
      this.mouthOffset += n;
      if (this.mouthOffset >= src.length) {
        this.mouth.shift();
        this.mouthOffset = 0;
      }
      this.queuedChunks--;
      bytes = this.frame;
    }
    this.gathered.push(Uint8Array.from(bytes));
    if (this.gathered.length === this.framesPerMessage) this.sendGathered(now);
    this.speechWaiters = this.speechWaiters.filter((w) => {
      if (this.chunk < w.untilChunk) return true;
      w.resolve();
      return false;
    });
  }

  /** One `media` message with the frames gathered: chunk counts messages, timestamp is its first frame's media time. */
  private sendGathered(now: number): void {
    const firstFrame = this.chunk - this.gathered.length + 1;
    const payload = Buffer.concat(this.gathered).toString('base64');
    this.gathered = [];
    const media = { track: 'inbound', chunk: String(++this.messages), timestamp: String((firstFrame - 1) * FRAME_MS), payload };
    const msg = JSON.stringify(
      this.telnyx ? { event: 'media', sequence_number: String(++this.seq), stream_id: this.streamSid, media } : { event: 'media', sequenceNumber: String(++this.seq), streamSid: this.streamSid, media },
    );
    this.link.offer(msg, now);
  }

  /** One 20 ms step of the virtual playout clock. */
  private playFrame(): void {
    this.echoDueMarks();
    let filled = 0;
    while (filled < FRAME_BYTES && this.playout.length && typeof this.playout[0] !== 'string') {
      const chunk = this.playout[0] as Uint8Array;
      const n = Math.min(FRAME_BYTES - filled, chunk.length - this.playoutOffset);
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
      // Silence still goes through the decoder so a phrase's end is seen.
      this.decoder.push(new Int16Array(FRAME_BYTES));
    } else {
      if (!this.playing) {
        this.playing = true;
        this.note('audio_start');
      }
      this.framesPlayed++;
      if (filled < FRAME_BYTES) this.frame.fill(this.silence[0]!, filled);
      if (this.alaw) alawDecode(this.frame, this.pcm);
      else mulawDecode(this.frame, this.pcm);
      this.decoder.push(this.pcm);
    }
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
    if (this.telnyx) this.send({ event: 'mark', sequence_number: String(++this.seq), stream_id: this.streamSid, mark: { name } });
    else this.send({ event: 'mark', sequenceNumber: String(++this.seq), streamSid: this.streamSid, mark: { name } });
  }

  /** Sends any text as one WebSocket message (hostile-input tests). */
  sendRaw(text: string): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(text);
  }

  private send(msg: unknown): void {
    if (this.ws.readyState === WebSocket.OPEN) this.ws.send(JSON.stringify(msg));
  }

  private note(kind: MediaCallEvent['kind'], detail?: string): void {
    this.events.push({ kind, atMs: performance.now(), detail });
  }

  private checkWaiters(): void {
    if (this.waiters.length === 0) return;
    this.waiters = this.waiters.filter((w) => {
      if (!w.pred()) return true;
      w.resolve();
      return false;
    });
  }
}

function randomHex(n: number): string {
  let s = '';
  for (let i = 0; i < n; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}
