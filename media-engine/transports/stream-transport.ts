/**
 * The media stream of Plivo, Vonage and Exotel (stream-wires.ts: one `StreamWire` each), as a
 * `CallTransport`. Same contract and same inbound pipeline as the Twilio transport (transports/NOTES.md):
 * frame budget, validated frames (shared/protocol/<carrier>-stream.ts), counter windows, garbage
 * policy, the adaptive jitter buffer, delivery on arrival in order, and the node's pacer popping one
 * frame per 20 ms slot with concealment for chunks given up. What differs per wire:
 *
 * - audio: mu-law 8 kHz (Plivo) or linear PCM (Exotel 8 kHz, Vonage 16 kHz): `inRateHz`/`outRateHz`
 *   are the wire's rate, so the actor resamples TTS to it and gets the caller at it, unchanged;
 * - frame keys: Exotel sends ~100 ms per message, so each message is cut into 20 ms frames keyed by
 *   its media timestamp (or chunk); Plivo's frames are one each; Vonage's binary frames carry no
 *   counter at all, so they are keyed in arrival order (a WebSocket is ordered: the buffer then
 *   absorbs jitter, and loss or reordering inside Vonage cannot be seen);
 * - marks: Plivo `checkpoint` -> `playedStream`, Vonage `notify` -> `websocket:notify`, Exotel
 *   `mark` -> `mark`. After a clear, Plivo and Vonage do not echo pending marks (Exotel may): names
 *   pending at a clear are moved to a cleared set either way, and an echo for one is `cleared: true`.
 */
import type { Clock } from '../../shared/clock.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { CarrierInvalidReason, StreamFrame } from '../../shared/protocol/stream-frames.js';
import { mulawDecode, MULAW_SILENCE } from '../audio/g711.js';
import { JitterBuffer } from '../audio/jitter-buffer.js';
import type { CallTransport } from '../session/transport.js';
import { TokenBucket } from '../session/token-bucket.js';
import { CounterWindow, GarbagePolicy } from './carrier-guard.js';
import { endSocket } from './socket-end.js';
import { concealPcm, readPcmLE, type OutWriter, type StreamCarrier, type StreamWire } from './stream-wires.js';
import type { TwilioAudioSink, TwilioSocket, TwilioTransportOptions, TwilioTransportStats } from './twilio-types.js';

export type StreamEvent =
  | { event: 'start'; streamId: string; callId: string; customParameters: Record<string, string> }
  | { event: 'mark'; name: string; cleared: boolean }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' }
  | { event: 'invalid'; reason: CarrierInvalidReason; close: boolean };

const FRAME_MS = 20;
const MAX_CONCEALED_RUN = 50;
export const MAX_BUFFERED_BYTES = 512 * 1024;
const MAX_PENDING_MARKS = 256;
const MAX_CATCH_UP_FRAMES = 6;
/** One message may hold at most this many 20 ms frames (Exotel: ~5); the rest is cut. */
const MAX_FRAMES_PER_MESSAGE = 25;
/** Exotel sends 10 messages a second, Plivo and Vonage 50; the same budget as Twilio's. */
const FRAME_BUDGET = { burst: 250, perSecond: 100 };
/** Frame keys start here, so a frame stamped before the first one to arrive still has a key >= 0. */
const KEY_ORIGIN = 1000;
const KEY_WINDOW = { behind: 50, ahead: 50, perMs: 1 / FRAME_MS };

export class StreamTransport implements CallTransport {
  readonly kind: StreamCarrier;
  inRateHz: number;
  outRateHz: number;
  readonly leadMs: number;
  streamId = '';
  callId = '';
  private started = false;
  private closed = false;
  private sink?: TwilioAudioSink;
  private out?: OutWriter;
  private jb!: JitterBuffer;
  private frameBytes = 0;
  private pcm = new Int16Array(0);
  private lastPcm = new Int16Array(0);
  private concealed = new Int16Array(0);
  private concealRun = 0;
  private readonly frameBudget: TokenBucket;
  private nextPopMs = -1;
  private deliveredSeq = -1;
  /** Frame keys: the first message's timestamp / chunk, and the next key when a message has neither. */
  private ts0?: number;
  private chunk0?: number;
  private nextKey = KEY_ORIGIN;
  private readonly keyWindow = new CounterWindow(KEY_WINDOW);
  private readonly pendingMarks = new Set<string>();
  private readonly clearedMarks = new Set<string>();
  private readonly garbage = new GarbagePolicy();
  private readonly invalidReasons: Partial<Record<CarrierInvalidReason, number>> = {};
  private readonly counters = { invalidFrames: 0, unknownEvents: 0, mediaBeforeClaim: 0, binaryFramesIgnored: 0, outFrames: 0, outFramesDropped: 0, marksSent: 0, marksHeard: 0, marksCleared: 0, clears: 0, dtmf: 0 };

  constructor(
    private readonly wire: StreamWire,
    private readonly ws: TwilioSocket,
    private readonly clock: Clock,
    private readonly opts: TwilioTransportOptions = {},
  ) {
    this.kind = wire.carrier;
    this.inRateHz = this.outRateHz = wire.sampleRateHz;
    this.leadMs = opts.leadMs ?? 100;
    this.frameBudget = new TokenBucket(clock, FRAME_BUDGET.burst, FRAME_BUDGET.perSecond);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Starts accepting media for `sink` (the session is claimed): media before this is dropped. */
  attach(sink: TwilioAudioSink): void {
    this.sink = sink;
  }

  // ------------------------------------------------------------------ CallTransport

  sendEvent(_ev: ServerEvent): void {
    // Suppressed on carrier sockets (everything goes to the conversation record).
  }

  sendAudio(frame: Int16Array): void {
    if (this.closed || !this.out) return;
    if (frame.length !== (this.outRateHz * FRAME_MS) / 1000) throw new RangeError(`${this.kind} transport: frame of ${frame.length} samples at ${this.outRateHz} Hz`);
    const msg = this.out.audio(frame);
    if (msg) this.send(msg, this.out.binary, true);
  }

  clearAudio(): void {
    if (this.closed || !this.out) return;
    this.out.drop();
    this.send(this.out.clear(), false, false);
    this.counters.clears++;
    for (const name of this.pendingMarks) this.clearedMarks.add(name);
    this.pendingMarks.clear();
    trim(this.clearedMarks);
  }

  mark(name: string): void {
    if (this.closed || !this.out) return;
    // A batch still filling holds audio queued before the mark: it goes first.
    const rest = this.out.flush();
    if (rest) this.send(rest, this.out.binary, true);
    this.send(this.out.mark(name), false, false);
    this.counters.marksSent++;
    this.pendingMarks.add(name);
    trim(this.pendingMarks);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    endSocket(this.ws, code, reason);
  }

  markClosed(): void {
    this.closed = true;
  }

  // ------------------------------------------------------------------ inbound

  /** One WebSocket message as uWS hands it over: budgeted, parsed, then acted on. */
  receiveFrame(message: ArrayBuffer, isBinary: boolean): StreamEvent | undefined {
    if (!this.frameBudget.take()) return this.invalid('frame_rate');
    if (isBinary) {
      if (!this.wire.parseBinary) {
        this.counters.binaryFramesIgnored++;
        return this.invalid('binary_frame');
      }
      const r = this.wire.parseBinary(new Uint8Array(message));
      return r.ok ? this.onFrame(r.frame) : this.invalid(r.reason);
    }
    const r = this.wire.parseText(Buffer.from(message).toString('utf8'));
    return r.ok ? this.onFrame(r.frame) : this.invalid(r.reason);
  }

  private onFrame(f: StreamFrame): StreamEvent | undefined {
    switch (f.event) {
      case 'unknown':
        this.counters.unknownEvents++;
        this.garbage.record(false);
        return undefined;
      case 'ignored':
      case 'cleared':
        this.garbage.record(false);
        return undefined;
      case 'start':
        if (this.started) return this.invalid('duplicate_start');
        this.garbage.record(false);
        this.begin(f.streamId, f.callId, f.format?.sampleRateHz ?? this.wire.sampleRateHz);
        return { event: 'start', streamId: f.streamId, callId: f.callId, customParameters: f.customParameters };
      case 'media':
        return this.onMedia(f);
      case 'mark':
        this.garbage.record(false);
        if (this.clearedMarks.delete(f.name)) {
          this.counters.marksCleared++;
          return { event: 'mark', name: f.name, cleared: true };
        }
        this.pendingMarks.delete(f.name);
        this.counters.marksHeard++;
        return { event: 'mark', name: f.name, cleared: false };
      case 'dtmf':
        this.garbage.record(false);
        this.counters.dtmf++;
        return { event: 'dtmf', digit: f.digit };
      case 'stop':
        this.garbage.record(false);
        return { event: 'stop' };
    }
  }

  private begin(streamId: string, callId: string, rateHz: number): void {
    this.started = true;
    this.streamId = streamId;
    this.callId = callId;
    this.inRateHz = this.outRateHz = rateHz;
    const samples = (rateHz * FRAME_MS) / 1000;
    this.frameBytes = this.wire.encoding === 'mulaw' ? samples : samples * 2;
    this.pcm = new Int16Array(samples);
    this.lastPcm = new Int16Array(samples);
    this.concealed = new Int16Array(samples);
    this.jb = new JitterBuffer({ frameMs: FRAME_MS, minDepthMs: 20, maxDepthMs: this.wire.maxDepthMs ?? 120, frameBytes: this.frameBytes, fillByte: this.wire.encoding === 'mulaw' ? MULAW_SILENCE : 0, clock: this.clock, ...this.opts.jitter });
    this.out = this.wire.writer(streamId, rateHz);
    this.keyWindow.anchor(this.clock.monotonicMs(), KEY_ORIGIN);
  }

  private onMedia(m: Extract<StreamFrame, { event: 'media' }>): StreamEvent | undefined {
    if (!this.started) return this.invalid('media_before_start');
    const now = this.clock.monotonicMs();
    const bytes = typeof m.payload === 'string' ? Buffer.from(m.payload, 'base64') : m.payload;
    const frames = Math.min(MAX_FRAMES_PER_MESSAGE, Math.max(1, Math.floor(bytes.length / this.frameBytes)));
    let key: number;
    if (m.timestampMs !== undefined) {
      this.ts0 ??= m.timestampMs;
      key = KEY_ORIGIN + Math.round((m.timestampMs - this.ts0) / FRAME_MS);
    } else if (m.chunk !== undefined) {
      this.chunk0 ??= m.chunk;
      key = KEY_ORIGIN + (m.chunk - this.chunk0) * frames;
    } else {
      key = this.nextKey;
    }
    if (key < 0 || !this.keyWindow.accept(key, now)) return this.invalid(m.timestampMs !== undefined ? 'timestamp_out_of_window' : 'chunk_out_of_window');
    this.garbage.record(false);
    this.nextKey = Math.max(this.nextKey, key + frames);
    if (!this.sink) {
      this.counters.mediaBeforeClaim++;
      return undefined;
    }
    let accepted = false;
    for (let i = 0; i < frames; i++) {
      const slice = bytes.subarray(i * this.frameBytes, Math.min(bytes.length, (i + 1) * this.frameBytes));
      if (this.jb.push(key + i, (key - KEY_ORIGIN + i) * FRAME_MS, slice, now) === 'accepted') accepted = true;
    }
    if (this.nextPopMs < 0) this.nextPopMs = now + FRAME_MS / 2;
    if (accepted) this.deliverInOrder();
    return undefined;
  }

  private deliverInOrder(): void {
    if (this.deliveredSeq < 0) return;
    for (let payload = this.jb.peek(this.deliveredSeq + 1); payload; payload = this.jb.peek(this.deliveredSeq + 1)) {
      this.deliveredSeq++;
      this.deliver(payload);
    }
  }

  private deliver(bytes: Uint8Array): void {
    if (this.wire.encoding === 'mulaw') mulawDecode(bytes, this.pcm);
    else readPcmLE(bytes, this.pcm);
    this.lastPcm.set(this.pcm);
    this.concealRun = 0;
    this.sink!.onAudio(this.pcm);
  }

  private invalid(reason: CarrierInvalidReason): StreamEvent {
    this.counters.invalidFrames++;
    this.invalidReasons[reason] = (this.invalidReasons[reason] ?? 0) + 1;
    return { event: 'invalid', reason, close: this.garbage.record(true) };
  }

  /** Node tick: pops the frames due on this call's own 20 ms schedule (twilio.ts `pace`). */
  pace(nowMs: number): void {
    if (this.closed || !this.sink || this.nextPopMs < 0) return;
    let n = 0;
    while (nowMs >= this.nextPopMs) {
      this.popOne(this.nextPopMs);
      this.nextPopMs += FRAME_MS;
      if (++n >= MAX_CATCH_UP_FRAMES && nowMs >= this.nextPopMs) {
        this.nextPopMs = nowMs + FRAME_MS;
        break;
      }
    }
  }

  private popOne(atMs: number): void {
    const r = this.jb.pop(atMs);
    if (r.kind === 'frame') {
      if (r.seq <= this.deliveredSeq) return;
      this.concealThrough(r.seq - 1);
      this.deliveredSeq = r.seq;
      this.deliver(r.payload);
    } else if (r.kind === 'concealed' && r.skipped) {
      this.concealThrough(r.seq);
    } else {
      return;
    }
    this.deliverInOrder();
  }

  private concealThrough(seq: number): void {
    if (this.deliveredSeq < 0 || seq <= this.deliveredSeq) return;
    for (let s = Math.max(this.deliveredSeq + 1, seq - MAX_CONCEALED_RUN + 1); s <= seq; s++) {
      concealPcm(this.lastPcm, this.concealed, ++this.concealRun);
      this.sink!.onAudio(this.concealed);
    }
    this.deliveredSeq = seq;
  }

  stats(): TwilioTransportStats {
    const jitter = this.jb ? this.jb.stats() : new JitterBuffer().stats();
    return { jitter, ...this.counters, invalidReasons: { ...this.invalidReasons } };
  }

  private send(msg: Uint8Array | string, binary: boolean, audio: boolean): void {
    if (audio && this.ws.getBufferedAmount() > MAX_BUFFERED_BYTES) {
      this.counters.outFramesDropped++;
      return;
    }
    const r = this.ws.send(msg, binary);
    if (audio) {
      if (r === 2) this.counters.outFramesDropped++;
      else this.counters.outFrames++;
    }
  }
}

function trim(set: Set<string>): void {
  while (set.size > MAX_PENDING_MARKS) set.delete(set.values().next().value as string);
}
