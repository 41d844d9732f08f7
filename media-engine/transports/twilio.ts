/**
 * Twilio Media Streams transport (protocols.md section 1): JSON text frames both ways, G.711
 * mu-law 8 kHz in 20 ms frames, base64. JSON events of the voice socket are suppressed (the
 * conversation record gets everything).
 *
 * Inbound: `media` frames go into an adaptive jitter buffer keyed by `chunk` (timestamp for the
 * jitter estimate); `pace(nowMs)`, called on the node's tick, pops one frame per 20 ms of its own
 * schedule, conceals gaps, decodes and upsamples to 16 kHz and hands the frame (plus the raw
 * mu-law when the ASR takes it) to the attached sink. Outbound: each 20 ms frame at 8 kHz is
 * encoded to mu-law and base64 straight into a preallocated JSON text frame (no per-frame
 * allocation). `mark` after each utterance; `clear` on barge-in, after which the marks still
 * pending are echoed by Twilio for audio that was dropped, not played: those echoes are swallowed.
 */
import type { Clock } from '../../shared/clock.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import { mulawDecode, mulawEncode, MULAW_SILENCE } from '../audio/g711.js';
import { conceal, JitterBuffer, type JitterBufferOptions, type JitterBufferStats } from '../audio/jitter-buffer.js';
import { Resampler } from '../audio/resampler.js';
import type { CallTransport } from '../session/transport.js';

export interface TwilioSocket {
  send(message: ArrayBufferView | string, isBinary?: boolean): number;
  getBufferedAmount(): number;
  end(code?: number, reason?: string): void;
}

/** What the transport feeds: the call actor (or a test sink). */
export interface TwilioAudioSink {
  /** One 20 ms frame of 16 kHz PCM; `raw` is the frame's mu-law bytes (reused buffers: consume now). */
  onAudio(pcm16k: Int16Array, raw?: Uint8Array): void;
}

/** Non-media events handed back to the node (media is consumed by the transport itself). */
export type TwilioEvent =
  | { event: 'connected' }
  | { event: 'start'; streamSid: string; callSid: string; accountSid: string; customParameters: Record<string, string> }
  /** `cleared`: the echo of a mark that was pending at a `clear` (its audio was dropped, not heard). */
  | { event: 'mark'; name: string; cleared: boolean }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' }
  | { event: 'invalid'; reason: string };

export interface TwilioTransportOptions {
  /** Audio sent ahead of real time. Default 100 ms (a `clear` drops it anyway). */
  leadMs?: number;
  /** Jitter buffer settings; default 20..120 ms depth, 20 ms frames of 160 bytes. */
  jitter?: JitterBufferOptions;
  /** Hand the raw mu-law frame to the sink too (the ASR takes mu-law). Default false. */
  passRawMulaw?: boolean;
}

export interface TwilioTransportStats {
  jitter: JitterBufferStats;
  /** Inbound media frames with an unusable payload or counters. */
  badFrames: number;
  binaryFramesIgnored: number;
  outFrames: number;
  outFramesDropped: number;
  marksSent: number;
  marksHeard: number;
  marksCleared: number;
  clears: number;
  dtmf: number;
}

const FRAME_MS = 20;
const FRAME_BYTES = 160;
/** Past this much unsent data we drop audio frames instead of growing memory (rule 10). */
export const MAX_BUFFERED_BYTES = 512 * 1024;
/** Marks remembered (sent, not yet echoed); beyond this the oldest is forgotten (rule 10). */
const MAX_PENDING_MARKS = 256;
/** The pop schedule never catches up more than this many frames in one tick (event-loop stall). */
const MAX_CATCH_UP_FRAMES = 6;
/** base64 of 160 bytes. */
const PAYLOAD_CHARS = 216;

const B64 = new TextEncoder().encode('ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/');
const PAD = 0x3d; // '='

/** base64 of `src` written into `dst` at `off` (no allocation); returns the bytes written. */
export function base64Into(src: Uint8Array, dst: Uint8Array, off: number): number {
  let o = off;
  const n = src.length;
  let i = 0;
  for (; i + 2 < n; i += 3) {
    const v = (src[i]! << 16) | (src[i + 1]! << 8) | src[i + 2]!;
    dst[o++] = B64[v >> 18]!;
    dst[o++] = B64[(v >> 12) & 63]!;
    dst[o++] = B64[(v >> 6) & 63]!;
    dst[o++] = B64[v & 63]!;
  }
  if (i < n) {
    const v = (src[i]! << 16) | ((i + 1 < n ? src[i + 1]! : 0) << 8);
    dst[o++] = B64[v >> 18]!;
    dst[o++] = B64[(v >> 12) & 63]!;
    dst[o++] = i + 1 < n ? B64[(v >> 6) & 63]! : PAD;
    dst[o++] = PAD;
  }
  return o - off;
}

export class TwilioTransport implements CallTransport {
  readonly kind = 'twilio' as const;
  readonly outRateHz = 8000;
  readonly leadMs: number;
  streamSid = '';
  callSid = '';
  private closed = false;
  private sink?: TwilioAudioSink;
  private passRaw: boolean;
  private readonly jb: JitterBuffer;
  private readonly upsampler = new Resampler(8000, 16000);
  /** Inbound scratch: payload bytes, previous frame (concealment), 8 kHz and 16 kHz PCM. */
  private readonly inBytes = Buffer.alloc(FRAME_BYTES * 4);
  private readonly lastFrame = new Uint8Array(FRAME_BYTES).fill(MULAW_SILENCE);
  private readonly concealed = new Uint8Array(FRAME_BYTES);
  private concealRun = 0;
  private readonly pcm8 = new Int16Array(FRAME_BYTES);
  private readonly pcm16 = new Int16Array(FRAME_BYTES * 2);
  private nextPopMs = -1;
  /** Outbound: the whole `media` text frame, payload rewritten in place per frame. */
  private outFrame = new Uint8Array(0);
  private payloadOffset = 0;
  private readonly outMulaw = new Uint8Array(FRAME_BYTES);
  private readonly pendingMarks = new Set<string>();
  private readonly clearedMarks = new Set<string>();
  private readonly counters = { badFrames: 0, binaryFramesIgnored: 0, outFrames: 0, outFramesDropped: 0, marksSent: 0, marksHeard: 0, marksCleared: 0, clears: 0, dtmf: 0 };

  constructor(
    private readonly ws: TwilioSocket,
    private readonly clock: Clock,
    opts: TwilioTransportOptions = {},
  ) {
    this.leadMs = opts.leadMs ?? 100;
    this.passRaw = opts.passRawMulaw ?? false;
    this.jb = new JitterBuffer({ frameMs: FRAME_MS, minDepthMs: 20, maxDepthMs: 120, frameBytes: FRAME_BYTES, clock, ...opts.jitter });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Starts feeding decoded audio to `sink` on the next ticks (frames buffered before it wait in the
   * jitter buffer). `passRawMulaw`: also hand over the raw frame (the ASR takes mu-law).
   */
  attach(sink: TwilioAudioSink, opts: { passRawMulaw?: boolean } = {}): void {
    this.sink = sink;
    if (opts.passRawMulaw !== undefined) this.passRaw = opts.passRawMulaw;
  }

  // ------------------------------------------------------------------ CallTransport

  sendEvent(_ev: ServerEvent): void {
    // Suppressed on carrier sockets (spec Events: everything goes to the conversation record).
  }

  sendAudio(frame: Int16Array): void {
    if (this.closed || !this.streamSid) return;
    if (frame.length !== FRAME_BYTES) throw new RangeError(`twilio transport: frame of ${frame.length} samples, want ${FRAME_BYTES}`);
    if (this.ws.getBufferedAmount() > MAX_BUFFERED_BYTES) {
      this.counters.outFramesDropped++;
      return;
    }
    mulawEncode(frame, this.outMulaw);
    base64Into(this.outMulaw, this.outFrame, this.payloadOffset);
    if (this.ws.send(this.outFrame, false) === 2) this.counters.outFramesDropped++;
    else this.counters.outFrames++;
  }

  clearAudio(): void {
    if (this.closed || !this.streamSid) return;
    this.sendJson({ event: 'clear', streamSid: this.streamSid });
    this.counters.clears++;
    // Twilio echoes these for audio it dropped: they must not count as heard.
    for (const name of this.pendingMarks) this.clearedMarks.add(name);
    this.pendingMarks.clear();
    trim(this.clearedMarks);
  }

  mark(name: string): void {
    if (this.closed || !this.streamSid) return;
    this.sendJson({ event: 'mark', streamSid: this.streamSid, mark: { name } });
    this.counters.marksSent++;
    this.pendingMarks.add(name);
    trim(this.pendingMarks);
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    try {
      this.ws.end(code, reason.slice(0, 120));
    } catch {
      // already closed by the peer
    }
  }

  markClosed(): void {
    this.closed = true;
  }

  // ------------------------------------------------------------------ inbound

  /** A binary frame from the carrier: not part of the protocol, counted and ignored. */
  receiveBinary(): void {
    this.counters.binaryFramesIgnored++;
  }

  /** One text frame from the carrier. `media` is consumed here; other events are returned. */
  receiveText(text: string): TwilioEvent | undefined {
    let msg: Record<string, any>;
    try {
      msg = JSON.parse(text) as Record<string, any>;
    } catch {
      return { event: 'invalid', reason: 'not JSON' };
    }
    switch (msg?.event) {
      case 'media':
        this.onMedia(msg.media);
        return undefined;
      case 'connected':
        return { event: 'connected' };
      case 'start': {
        const s = (msg.start ?? {}) as Record<string, any>;
        const streamSid = String(s.streamSid ?? msg.streamSid ?? '');
        if (!streamSid) return { event: 'invalid', reason: 'start without streamSid' };
        this.setStreamSid(streamSid);
        this.callSid = String(s.callSid ?? '');
        const params: Record<string, string> = {};
        for (const [k, v] of Object.entries((s.customParameters ?? {}) as Record<string, unknown>)) if (typeof v === 'string') params[k] = v;
        return { event: 'start', streamSid, callSid: this.callSid, accountSid: String(s.accountSid ?? ''), customParameters: params };
      }
      case 'mark': {
        const name = String(msg.mark?.name ?? '');
        if (this.clearedMarks.delete(name)) {
          this.counters.marksCleared++;
          return { event: 'mark', name, cleared: true };
        }
        this.pendingMarks.delete(name);
        this.counters.marksHeard++;
        return { event: 'mark', name, cleared: false };
      }
      case 'dtmf':
        this.counters.dtmf++;
        return { event: 'dtmf', digit: String(msg.dtmf?.digit ?? '') };
      case 'stop':
        return { event: 'stop' };
      default:
        return { event: 'invalid', reason: `unknown event ${String(msg?.event)}` };
    }
  }

  private onMedia(media: Record<string, unknown> | undefined): void {
    // `chunk` counts media frames from 1 (sequenceNumber counts every message: not usable).
    const seq = Number(media?.chunk);
    const ts = Number(media?.timestamp);
    const payload = media?.payload;
    if (!Number.isInteger(seq) || seq < 0 || !Number.isFinite(ts) || typeof payload !== 'string') {
      this.counters.badFrames++;
      return;
    }
    if (media?.track !== undefined && media.track !== 'inbound') return;
    const n = this.inBytes.write(payload, 0, 'base64');
    if (n === 0) {
      this.counters.badFrames++;
      return;
    }
    const now = this.clock.monotonicMs();
    // Payload size is not promised: a longer frame is cut to 20 ms, a shorter one padded (by the buffer).
    this.jb.push(seq, ts, this.inBytes.subarray(0, Math.min(n, FRAME_BYTES)), now);
    // Pops run half a frame after arrivals: arrival jitter of a few ms never flips the depth
    // between one and two frames (each flip would conceal or trim a frame: a time warp).
    if (this.nextPopMs < 0) this.nextPopMs = now + FRAME_MS / 2;
  }

  /** Node tick: pops the frames due on this call's own 20 ms schedule. */
  pace(nowMs: number): void {
    if (this.closed || !this.sink || this.nextPopMs < 0) return;
    let n = 0;
    while (nowMs >= this.nextPopMs) {
      this.popOne(this.nextPopMs);
      this.nextPopMs += FRAME_MS;
      if (++n >= MAX_CATCH_UP_FRAMES && nowMs >= this.nextPopMs) {
        // The loop stalled: skip ahead rather than burst audio (the buffer absorbs the gap).
        this.nextPopMs = nowMs + FRAME_MS;
        break;
      }
    }
  }

  private popOne(atMs: number): void {
    const r = this.jb.pop(atMs);
    let bytes: Uint8Array;
    if (r.kind === 'frame') {
      this.lastFrame.set(r.payload);
      this.concealRun = 0;
      bytes = this.lastFrame;
    } else if (r.kind === 'concealed') {
      conceal(this.lastFrame, this.concealed, ++this.concealRun);
      bytes = this.concealed;
    } else {
      return;
    }
    mulawDecode(bytes, this.pcm8);
    this.upsampler.processInto(this.pcm8, this.pcm16);
    this.sink!.onAudio(this.pcm16, this.passRaw ? bytes : undefined);
  }

  stats(): TwilioTransportStats {
    return { jitter: this.jb.stats(), ...this.counters };
  }

  private setStreamSid(sid: string): void {
    this.streamSid = sid;
    const prefix = new TextEncoder().encode(`{"event":"media","streamSid":${JSON.stringify(sid)},"media":{"payload":"`);
    const suffix = new TextEncoder().encode('"}}');
    this.outFrame = new Uint8Array(prefix.length + PAYLOAD_CHARS + suffix.length);
    this.outFrame.set(prefix, 0);
    this.outFrame.set(suffix, prefix.length + PAYLOAD_CHARS);
    this.payloadOffset = prefix.length;
  }

  private sendJson(msg: unknown): void {
    this.ws.send(JSON.stringify(msg), false);
  }
}

function trim(set: Set<string>): void {
  while (set.size > MAX_PENDING_MARKS) set.delete(set.values().next().value as string);
}
