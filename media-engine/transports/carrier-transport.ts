/**
 * The carrier media stream transport (issue 24: generic over `CarrierProtocol`, carrier-protocol.ts;
 * born as the Twilio Media Streams transport, docs/protocols.md section 1): JSON text frames (or
 * binary audio) both ways, G.711 mu-law / A-law or L16 in 20 ms frames. The protocol parses and
 * encodes; everything below is the same for every carrier. JSON events of the voice socket are
 * suppressed (the conversation record gets everything).
 *
 * Inbound: `media` frames go into an adaptive jitter buffer keyed by `chunk` (timestamp for the
 * jitter estimate). The sink (VAD, ASR) gets every frame once, in chunk order, decoded to 8 kHz
 * PCM (the call's native rate: nothing is resampled on the way in), plus the raw mu-law when the
 * ASR takes it. A frame that arrives in order goes to the sink at once, on arrival, so voice
 * activity and a transcript that confirms a barge-in (and with it the `clear`) never wait for the
 * playout delay. `pace(nowMs)`, called on the node's tick, pops one frame per 20 ms of its own
 * schedule: frames already handed over are skipped; gaps (loss, reordering, a stalled stream) are
 * concealed or filled from the buffer in order, as before. Outbound: each 20 ms frame at 8 kHz is
 * encoded to mu-law and base64 straight into a preallocated JSON text frame (no per-frame
 * allocation). `mark` after each utterance; `clear` on barge-in, after which the marks still
 * pending are echoed by Twilio for audio that was dropped, not played: those echoes are swallowed.
 */
import type { Clock } from '../../shared/clock.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import { conceal, JitterBuffer } from '../audio/jitter-buffer.js';
import type { CallTransport } from '../session/transport.js';
import { MAX_MEDIA_PAYLOAD_BYTES, type CarrierFrame, type CarrierInvalidReason } from '../../shared/protocol/twilio-media.js';
import { base64Chars, frameBytes, type CarrierMediaFormat, type CarrierProtocol } from './carrier-protocol.js';
import { ALAW_TO_MULAW, concealL16, copyInto, decodeFrame, encodeFrame, silenceByte } from './carrier-codecs.js';
import { CounterWindow, GarbagePolicy } from './carrier-guard.js';
import { TokenBucket } from '../session/token-bucket.js';
import { endSocket } from './socket-end.js';
import { base64Into } from './twilio-media-frame.js';
import type { CarrierAudioSink, CarrierEvent, CarrierSocket, CarrierTransportOptions, CarrierTransportStats } from './carrier-types.js';
import { JsonMediaScanner, newScannedMedia, type JsonMediaDialect, type ScannedMedia } from './json-media-scan.js';
import { InboundReframer } from './inbound-reframer.js';

export type { CarrierAudioSink, CarrierEvent, CarrierSocket, CarrierTransportOptions, CarrierTransportStats } from './carrier-types.js';

const FRAME_MS = 20;
/** Largest 20 ms frame of any carrier format (L16 16 kHz): the scratch buffers' size. */
const MAX_FRAME_BYTES = 640;
/**
 * Most audio one `media` message may carry: Exotel sends ~100 ms per message (1,600 bytes), and a
 * message of k whole frames is k consecutive chunks. Beyond this it is cut (its parser bounds it too).
 */
const MAX_MESSAGE_BYTES = 8000;
const MAX_FRAMES_PER_MESSAGE = 25;
/** Most 20 ms frames per outgoing message (CARRIER_OUT_MESSAGE_MS at most 100). */
const MAX_OUT_FRAMES_PER_MESSAGE = 5;

/**
 * Inbound scratch shared by every stream of the process (it was 8 kB per call): a payload is
 * decoded into it and copied into its stream's jitter buffer before the message handler returns,
 * and one event loop runs one handler at a time.
 */
const inboundScratch = Buffer.alloc(Math.max(MAX_MEDIA_PAYLOAD_BYTES, MAX_MESSAGE_BYTES));
/** Whole-frame views into inboundScratch per frame size, made once: no view is allocated per frame. */
const scratchFramesBySize = new Map<number, readonly Uint8Array[]>();

function scratchFrames(size: number): readonly Uint8Array[] {
  let views = scratchFramesBySize.get(size);
  if (!views) {
    const list: Uint8Array[] = [];
    for (let i = 0; i < MAX_FRAMES_PER_MESSAGE && (i + 1) * size <= inboundScratch.length; i++) list.push(inboundScratch.subarray(i * size, (i + 1) * size));
    views = list;
    // Keyed by a protocol format's frame size: a handful of entries for the whole process.
    scratchFramesBySize.set(size, views);
  }
  return views;
}
/** One scanner per JSON media dialect for the whole process (a scan runs to its end before the next). */
const scanners = new Map<JsonMediaDialect, JsonMediaScanner>();
function scannerFor(d: JsonMediaDialect): JsonMediaScanner {
  let s = scanners.get(d);
  if (!s) scanners.set(d, (s = new JsonMediaScanner(d)));
  return s;
}
/** The last scanned media message's fields: read before the next message is scanned, like the scratch. */
const scanned: ScannedMedia = newScannedMedia();

/** Longest run of concealed frames handed over for one gap (a restart after a long stall): 1 s. */
const MAX_CONCEALED_RUN = 50;
/** Past this much unsent data we drop audio frames instead of growing memory (rule 10). */
export const MAX_BUFFERED_BYTES = 512 * 1024;
/** Marks remembered (sent, not yet echoed); beyond this the oldest is forgotten (rule 10). */
const MAX_PENDING_MARKS = 256;
/** The pop schedule never catches up more than this many frames in one tick (event-loop stall). */
const MAX_CATCH_UP_FRAMES = 6;
/**
 * Frames a socket may send: Twilio sends 50 media frames a second plus a few marks, and after a
 * network stall a burst of what was held. Budget: a burst of 2,000 messages (what a stall of 40 s
 * holds at 20 ms per message, 20 s at 10 ms; at 250 a 5 s stall closed the call), then three times
 * real time (a sender of 10 ms messages sends 100 a second). A flood past it is dropped before it
 * is decoded or parsed (the parse is what costs; 2,000 parses are ~10 ms) and counts as garbage,
 * which closes the stream if it goes on.
 */
const FRAME_BUDGET = { burst: 2000, perSecond: 150 };
/**
 * Counter windows (see CounterWindow): `chunk` may trail the newest chunk by 1 s of frames
 * (reordering, late frames) and lead it by 1 s plus the frames of elapsed real time; the media
 * timestamp likewise in ms; `sequenceNumber` counts every message, so it may advance twice as fast.
 * Beyond that a value is not a counter of this stream: the frame is dropped as invalid. The jitter
 * buffer's own work is bounded by its ring size whatever the value (jitter-buffer.ts).
 */
const CHUNK_WINDOW = { behind: 50, ahead: 50, perMs: 1 / FRAME_MS };
const TIMESTAMP_WINDOW = { behind: 1000, ahead: 1000, perMs: 1 };
const SEQUENCE_WINDOW = { behind: 100, ahead: 100, perMs: 2 / FRAME_MS };
export class CarrierTransport implements CallTransport {
  /** Every carrier stream is `twilio` to the actor (a carrier socket: no JSON events, marks). */
  readonly kind = 'twilio' as const;
  readonly carrier: string;
  /**
   * The stream's rates: the protocol's format until `start` names another (Vonage: 8 or 16 kHz, per
   * stream). Fixed from `start` on; the actor is only built after it (the claim), so it sees these.
   */
  inRateHz: number;
  outRateHz: number;
  readonly leadMs: number;
  streamSid = '';
  callSid = '';
  /** The media of this stream: the protocol's until `start` names another it takes. */
  format: CarrierMediaFormat;
  private frameBytes: number;
  private closed = false;
  private sink?: CarrierAudioSink;
  private passRaw: boolean;
  /** Built by useFormat (the constructor's call, then `start`'s if it names another format). */
  private jb!: JitterBuffer;
  private readonly jitterOpts: CarrierTransportOptions['jitter'];
  private readonly frameBudget: TokenBucket;
  /** The byte-level `media` reader of JSON carriers (json-media-scan.ts); other frames take the full parser. */
  private readonly scanner?: JsonMediaScanner;
  /** The stream id as bytes, compared with a scanned frame's without making a string. */
  private streamSidBytes = new Uint8Array(0);
  /** Views of whole frames into the shared inbound scratch, for this stream's frame size. */
  private scratchViews: readonly Uint8Array[] = [];
  /** Encoder slots of a batched outbound message (outBatch > 1), one per frame. */
  private outSlots: Uint8Array[] = [];
  /** Binary media frames carry no counter (Vonage): numbered here, in arrival order. */
  private binaryChunks = 0;
  /** Set once a `media` payload is not one 20 ms frame: the stream is reframed from then on. */
  private reframer?: InboundReframer;
  /** The reframer's output: one whole frame into the jitter buffer (bound once, no per-frame closure). */
  private readonly pushReframed = (chunk: number, timestampMs: number, frame: Uint8Array): void => {
    if (this.jb.push(chunk, timestampMs, frame, this.clock.monotonicMs()) === 'accepted') this.deliverInOrder();
  };
  private lastFrame: Uint8Array;
  private concealed: Uint8Array;
  private concealRun = 0;
  /** Decoded PCM of one frame at the stream's rate. */
  private pcm: Int16Array;
  /** A-law frames transcoded to mu-law for a sink that takes mu-law. */
  private readonly rawMulaw = new Uint8Array(160);
  private nextPopMs = -1;
  /** Highest chunk handed to the sink; -1 until the first pop fixes where the stream starts. */
  private deliveredSeq = -1;
  /** Outbound: the whole `media` text frame, payload rewritten in place per frame. */
  private outFrame = new Uint8Array(0);
  private outBinary = false;
  private payloadOffset = 0;
  private outBytes: Uint8Array;
  /** Frames per outgoing media message (Exotel: 5) and how many of the current one are filled. */
  private readonly outBatch: number;
  /** Fewest frames in a message sent mid-answer: the protocol's own minimum (Exotel: 5), else 1. */
  private readonly minOutFrames: number;
  private outFill = 0;
  /** Carriers without mark echoes: marks "heard" once the audio before them has played (due ms, name). */
  private readonly emulatedMarks: Array<{ dueMs: number; name: string }> = [];
  private outPlayedUntilMs = 0;
  private onEmulatedMark?: (name: string) => void;
  private readonly pendingMarks = new Set<string>();
  private readonly clearedMarks = new Set<string>();
  private readonly chunkWindow = new CounterWindow(CHUNK_WINDOW);
  private readonly timestampWindow = new CounterWindow(TIMESTAMP_WINDOW);
  private readonly sequenceWindow = new CounterWindow(SEQUENCE_WINDOW);
  private readonly garbage = new GarbagePolicy();
  private readonly invalidReasons: Partial<Record<CarrierInvalidReason, number>> = {};
  private readonly counters = { invalidFrames: 0, unknownEvents: 0, mediaBeforeClaim: 0, mediaDroppedOutOfOrder: 0, binaryFramesIgnored: 0, outFrames: 0, outFramesDropped: 0, marksSent: 0, marksHeard: 0, marksCleared: 0, clears: 0, dtmf: 0 };

  constructor(
    private readonly ws: CarrierSocket,
    private readonly clock: Clock,
    readonly protocol: CarrierProtocol,
    opts: CarrierTransportOptions = {},
  ) {
    this.carrier = protocol.carrier;
    const own = Math.max(1, protocol.framesPerMessage ?? 1);
    this.minOutFrames = own;
    this.outBatch = protocol.multiFrameOut ? Math.max(own, Math.min(MAX_OUT_FRAMES_PER_MESSAGE, Math.floor(opts.framesPerMessage ?? 1))) : own;
    this.jitterOpts = opts.jitter;
    // Placeholders, sized by useFormat (the protocol's format now, `start`'s once it names one).
    this.format = protocol.format;
    this.inRateHz = this.outRateHz = this.frameBytes = 0;
    this.lastFrame = this.concealed = this.outBytes = new Uint8Array(0);
    this.pcm = new Int16Array(0);
    this.useFormat(protocol.format);
    // A batched message leaves when its last frame is there: the lead covers the batch too.
    this.leadMs = opts.leadMs ?? 100 + (this.outBatch - 1) * FRAME_MS;
    this.passRaw = opts.passRawMulaw ?? false;
    this.frameBudget = new TokenBucket(clock, FRAME_BUDGET.burst, FRAME_BUDGET.perSecond);
    if (protocol.jsonMedia) this.scanner = scannerFor(protocol.jsonMedia);
    // sequenceNumber counts from the first message of the socket.
    this.sequenceWindow.anchor(clock.monotonicMs());
  }

  /**
   * Sizes everything per-frame for `fmt`: the rates the actor will run at, the scratch buffers and
   * the jitter buffer. Only before media flows (construction, `start`): nothing buffered is lost.
   */
  private useFormat(fmt: CarrierMediaFormat): void {
    const sizeChanged = frameBytes(fmt) !== this.frameBytes || fmt.codec !== this.format.codec;
    this.format = { ...fmt };
    this.inRateHz = this.outRateHz = fmt.sampleRateHz;
    if (!sizeChanged && this.pcm.length > 0) return;
    this.frameBytes = frameBytes(fmt);
    this.lastFrame = new Uint8Array(this.frameBytes).fill(silenceByte(fmt.codec));
    this.concealed = new Uint8Array(this.frameBytes);
    this.outBytes = new Uint8Array(this.frameBytes * this.outBatch);
    this.outSlots = [];
    for (let i = 0; i < this.outBatch && this.outBatch > 1; i++) this.outSlots.push(this.outBytes.subarray(i * this.frameBytes, (i + 1) * this.frameBytes));
    this.scratchViews = this.frameBytes > 0 ? scratchFrames(this.frameBytes) : [];
    this.pcm = new Int16Array((fmt.sampleRateHz / 1000) * FRAME_MS);
    this.jb = this.newJitterBuffer();
  }

  private newJitterBuffer(): JitterBuffer {
    return new JitterBuffer({ frameMs: FRAME_MS, minDepthMs: 20, maxDepthMs: this.protocol.maxDepthMs ?? 120, frameBytes: Math.max(1, this.frameBytes), fillByte: silenceByte(this.format.codec), clock: this.clock, ...this.jitterOpts });
  }

  /** Whether `start` may switch this stream to `fmt`: a rate the protocol takes, same frame size unless the protocol lists several rates. */
  private accepts(fmt: CarrierMediaFormat): boolean {
    const rates = this.protocol.sampleRatesHz ?? [this.protocol.format.sampleRateHz];
    if (!rates.includes(fmt.sampleRateHz)) return false;
    return rates.length > 1 ? fmt.codec === this.protocol.format.codec : frameBytes(fmt) === frameBytes(this.protocol.format);
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /**
   * Starts accepting media for `sink` (the session is claimed): media before this is dropped. `passRawMulaw`: also hand over the raw frame (the ASR takes mu-law).
   */
  attach(sink: CarrierAudioSink, opts: { passRawMulaw?: boolean } = {}): void {
    this.sink = sink;
    if (opts.passRawMulaw !== undefined) this.passRaw = opts.passRawMulaw;
  }

  /**
   * Whether the sink can be handed mu-law frames (an ASR taking mu-law then skips decoding and
   * resampling): mu-law as received, or A-law transcoded byte by byte (a table lookup).
   */
  get rawIsMulaw(): boolean {
    return this.format.codec === 'pcmu' || this.format.codec === 'pcma';
  }

  /** Where emulated mark echoes go (carriers without marks; the node posts them to the actor). */
  onMarkEmulated(fn: (name: string) => void): void {
    this.onEmulatedMark = fn;
  }

  // ------------------------------------------------------------------ CallTransport

  sendEvent(_ev: ServerEvent): void {
    // Suppressed on carrier sockets (spec Events: everything goes to the conversation record).
  }

  sendAudio(frame: Int16Array): void {
    if (this.closed || !this.streamSid) return;
    if (frame.length !== this.pcm.length) throw new RangeError(`${this.carrier} transport: frame of ${frame.length} samples, want ${this.pcm.length}`);
    if (this.ws.getBufferedAmount() > MAX_BUFFERED_BYTES) {
      this.counters.outFramesDropped++;
      return;
    }
    if (this.outBatch === 1) {
      encodeFrame(this.format.codec, frame, this.outBytes);
      const sent = this.outBinary ? this.ws.send(this.outBytes, true) : (base64Into(this.outBytes, this.outFrame, this.payloadOffset), this.ws.send(this.outFrame, false));
      if (sent === 2) this.counters.outFramesDropped++;
      else this.counters.outFrames++;
    } else {
      encodeFrame(this.format.codec, frame, this.outSlots[this.outFill]!);
      if (++this.outFill === this.outBatch) this.flushBatch();
    }
    // Real-time play-out position at the carrier, for emulated marks.
    const now = this.clock.monotonicMs();
    this.outPlayedUntilMs = Math.max(this.outPlayedUntilMs, now) + FRAME_MS;
  }

  flushAudio(endOfAudio = true): void {
    if (!endOfAudio && this.outFill < this.minOutFrames) return;
    if (this.outFill > 0 && !this.closed && this.streamSid) this.flushBatch();
  }

  clearAudio(): void {
    if (this.closed || !this.streamSid) return;
    // A batch still filling is audio the caller must not hear either.
    this.outFill = 0;
    this.ws.send(this.protocol.clearFrame(this.streamSid), false);
    this.counters.clears++;
    this.outPlayedUntilMs = 0;
    if (!this.protocol.marks) {
      // No carrier echoes: the pending marks' audio was dropped, so they are never heard.
      this.counters.marksCleared += this.emulatedMarks.length;
      this.emulatedMarks.length = 0;
      return;
    }
    // Twilio echoes these for audio it dropped: they must not count as heard.
    for (const name of this.pendingMarks) this.clearedMarks.add(name);
    this.pendingMarks.clear();
    trim(this.clearedMarks);
  }

  mark(name: string): void {
    if (this.closed || !this.streamSid) return;
    this.counters.marksSent++;
    // The audio queued before the mark goes first, even a batch not yet full.
    if (this.outFill > 0) this.flushBatch();
    if (!this.protocol.marks) {
      this.emulatedMarks.push({ dueMs: Math.max(this.outPlayedUntilMs, this.clock.monotonicMs()), name });
      if (this.emulatedMarks.length > MAX_PENDING_MARKS) this.emulatedMarks.shift();
      return;
    }
    this.ws.send(this.protocol.markFrame(this.streamSid, name), false);
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

  /** A binary frame from the carrier: not part of Media Streams, so an invalid frame. */
  /** One WebSocket message from the carrier, as uWS hands it over: budgeted first, then parsed. */
  receiveFrame(message: ArrayBuffer, isBinary: boolean): CarrierEvent | undefined {
    if (!this.frameBudget.take()) return this.invalid('frame_rate');
    if (isBinary && this.protocol.parseBinary) {
      const parsed = this.protocol.parseBinary(new Uint8Array(message));
      // A WebSocket is ordered and binary audio has no counter: arrival order is the chunk order.
      if (parsed.ok && parsed.frame.event === 'media' && this.streamSid) {
        parsed.frame.chunk = ++this.binaryChunks;
        parsed.frame.timestampMs = (parsed.frame.chunk - 1) * FRAME_MS;
      }
      return this.receiveParsed(parsed);
    }
    if (isBinary) return this.receiveBinary();
    if (this.scanner) {
      const bytes = new Uint8Array(message);
      if (this.scanner.scan(bytes, scanned, inboundScratch)) return this.receiveScanned(bytes);
    }
    return this.receiveText(Buffer.from(message).toString('utf8'));
  }

  /** A `media` message read by the scanner (payload already in the scratch): the checks of receiveParsed, in its order. */
  private receiveScanned(bytes: Uint8Array): CarrierEvent | undefined {
    const now = this.clock.monotonicMs();
    if (scanned.sequenceNumber >= 0 && !this.sequenceWindow.accept(scanned.sequenceNumber, now)) return this.invalid('sequence_out_of_window');
    if (this.streamSid && scanned.streamStart >= 0 && !sameBytes(bytes, scanned.streamStart, scanned.streamEnd, this.streamSidBytes)) return this.invalid('stream_sid_mismatch');
    return this.acceptMedia(scanned.chunk, scanned.timestampMs, scanned.track, scanned.payloadBytes, now);
  }

  receiveBinary(): CarrierEvent {
    this.counters.binaryFramesIgnored++;
    return this.invalid('binary_frame');
  }

  /**
   * One text frame from the carrier. Every field is validated (shared/protocol/twilio-media.ts)
   * and every counter checked against its window before anything uses it; `media` is consumed
   * here, other events are returned. An `invalid` result with `close` means the stream has sent
   * too much garbage and the node should close it.
   */
  receiveText(text: string): CarrierEvent | undefined {
    return this.receiveParsed(this.protocol.parse(text));
  }

  private receiveParsed(parsed: ReturnType<CarrierProtocol['parse']>): CarrierEvent | undefined {
    if (!parsed.ok) return this.invalid(parsed.reason);
    const f = parsed.frame;
    if (f.event === 'unknown') {
      // Twilio adds events over time: ignored and counted, not garbage.
      this.counters.unknownEvents++;
      this.garbage.record(false);
      return undefined;
    }
    if (f.event === 'connected') {
      this.garbage.record(false);
      return { event: 'connected' };
    }
    const now = this.clock.monotonicMs();
    if (f.sequenceNumber !== undefined && !this.sequenceWindow.accept(f.sequenceNumber, now)) return this.invalid('sequence_out_of_window');
    if (this.streamSid && f.streamSid !== undefined && f.streamSid !== this.streamSid) return this.invalid('stream_sid_mismatch');
    switch (f.event) {
      case 'media':
        return this.onMedia(f, now);
      case 'start':
        if (this.streamSid) return this.invalid('duplicate_start');
        this.garbage.record(false);
        if (f.format) {
          // Another codec of the same frame size (Telnyx PCMU <-> PCMA), or a rate the protocol
          // lists (Vonage 8 or 16 kHz, as its NCCO asked): the stream runs at it from here on.
          if (!this.accepts(f.format)) return this.invalid('bad_media_format');
          this.useFormat(f.format);
        }
        this.setStreamSid(f.streamSid);
        this.callSid = f.callSid;
        // chunk counts from 1 and timestamp from 0 at `start`: both windows begin here.
        this.chunkWindow.anchor(now);
        this.timestampWindow.anchor(now);
        return { event: 'start', streamSid: f.streamSid, callSid: f.callSid, accountSid: f.accountSid, customParameters: f.customParameters };
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

  private onMedia(m: Extract<CarrierFrame, { event: 'media' }>, now: number): CarrierEvent | undefined {
    return this.acceptMedia(m.chunk, m.timestampMs, m.track, m.payload, now);
  }

  /** `payload`: base64 text, the raw bytes, or the number of bytes already decoded into the scratch (scanned). */
  private acceptMedia(chunk: number, timestampMs: number, track: 'inbound' | 'outbound', payload: string | Uint8Array | number, now: number): CarrierEvent | undefined {
    // No media before `start` (protocol violation) ...
    if (!this.streamSid) return this.invalid('media_before_start');
    if (!this.reframer) {
      // `chunk` counts media frames from 1 (sequenceNumber counts every message: not usable as a key).
      if (!this.chunkWindow.accept(chunk, now)) return this.invalid('chunk_out_of_window');
      if (!this.timestampWindow.accept(timestampMs, now)) return this.invalid('timestamp_out_of_window');
    } else if (this.protocol.mediaTimestamps && !this.timestampWindow.accept(timestampMs, now)) {
      return this.invalid('timestamp_out_of_window');
    }
    this.garbage.record(false);
    if (track !== 'inbound') return undefined;
    // ... nor before the session is claimed (the claim is a registry round trip): dropped and
    // counted, not buffered, so an unclaimed socket holds no audio and costs no jitter-buffer work.
    if (!this.sink) {
      this.counters.mediaBeforeClaim++;
      return undefined;
    }
    const n = typeof payload === 'number' ? payload : typeof payload === 'string' ? inboundScratch.write(payload, 0, 'base64') : copyInto(payload, inboundScratch);
    // Decided on a valid inbound message only: one that is not a 20 ms frame reframes the stream.
    if (!this.reframer && !this.protocol.multiFrameMedia && n !== this.frameBytes) this.startReframing();
    // Pops run half a frame after arrivals: arrival jitter of a few ms never flips the depth
    // between one and two frames (each flip would conceal or trim a frame: a time warp).
    if (this.nextPopMs < 0) this.nextPopMs = now + FRAME_MS / 2;
    if (this.reframer) {
      if (!this.reframer.take(inboundScratch, n, this.protocol.mediaTimestamps ? timestampMs : NaN)) this.counters.mediaDroppedOutOfOrder++;
      return undefined;
    }
    // Carriers sending k whole frames per message (Exotel's 100 ms): k consecutive chunks.
    const frames = this.protocol.multiFrameMedia ? Math.min(MAX_FRAMES_PER_MESSAGE, Math.max(1, Math.floor(n / this.frameBytes))) : 1;
    const views = this.scratchViews;
    let pushed = this.jb.push(chunk, timestampMs, n >= this.frameBytes ? views[0]! : inboundScratch.subarray(0, n), now);
    for (let i = 1; i < frames; i++) {
      if (this.jb.push(chunk + i, timestampMs + i * FRAME_MS, views[i]!, now) === 'accepted') pushed = 'accepted';
    }
    if (pushed === 'accepted') this.deliverInOrder();
    return undefined;
  }

  /**
   * The stream's payloads are not 20 ms each (10, 30, 40, 128 ms ...): from here on its audio is
   * one byte stream cut into frames, after the frames already buffered. The carrier's `chunk` then
   * counts messages, not frames, so its window no longer applies (nor a timestamp made from it).
   */
  private startReframing(): void {
    this.reframer = new InboundReframer(this.frameBytes, silenceByte(this.format.codec), this.pushReframed, Math.max(0, this.jb.newestPushed));
  }

  /**
   * Hands over, now, every buffered frame that continues the delivered sequence (the one that just
   * arrived, and any reordered ones it unblocks). The frames stay in the buffer for the playout
   * schedule, which skips them when their turn comes.
   */
  private deliverInOrder(): void {
    if (this.deliveredSeq < 0) return;
    for (let payload = this.jb.peek(this.deliveredSeq + 1); payload; payload = this.jb.peek(this.deliveredSeq + 1)) {
      this.deliveredSeq++;
      this.lastFrame.set(payload);
      this.concealRun = 0;
      this.deliver(this.lastFrame);
    }
  }

  private deliver(bytes: Uint8Array): void {
    decodeFrame(this.format.codec, bytes, this.pcm);
    let raw: Uint8Array | undefined;
    if (this.passRaw && this.format.codec === 'pcmu') raw = bytes;
    else if (this.passRaw && this.format.codec === 'pcma') {
      for (let i = 0; i < bytes.length; i++) this.rawMulaw[i] = ALAW_TO_MULAW[bytes[i]!]!;
      raw = this.rawMulaw;
    }
    this.sink!.onAudio(this.pcm, raw);
  }

  /** Counts an invalid frame (dropped); `close` once the stream has sent too much garbage. */
  private invalid(reason: CarrierInvalidReason): CarrierEvent {
    this.counters.invalidFrames++;
    this.invalidReasons[reason] = (this.invalidReasons[reason] ?? 0) + 1;
    const close = this.garbage.record(true);
    // A start naming media we cannot take: nothing the stream sends can be used, so it is closed
    // at once with a reason that says why (not left to the start deadline).
    if (reason === 'bad_media_format' && !this.streamSid) return { event: 'invalid', reason, close: true, message: `unsupported media format (${this.carrier} streams here: ${this.formatsAccepted()})` };
    return { event: 'invalid', reason, close };
  }

  private formatsAccepted(): string {
    const rates = this.protocol.sampleRatesHz ?? [this.protocol.format.sampleRateHz];
    return `${this.protocol.format.codec} at ${rates.join(' or ')} Hz`;
  }

  /** Node tick: pops the frames due on this call's own 20 ms schedule. */
  pace(nowMs: number): void {
    if (this.emulatedMarks.length > 0) this.emitDueMarks(nowMs);
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

  /**
   * The playout schedule's turn. The sink's stream holds exactly one frame per chunk: the frame,
   * or a concealed one for a chunk given up as lost. A tick that only waits for a frame that may
   * still come (an underrun, a reordered frame) hands over nothing: the frame itself goes on
   * arrival. (Handing a concealed frame over for the wait as well, then the frame, would insert
   * 20 ms into the caller's audio; before on-arrival delivery a later trim happened to cancel
   * that out, now nothing would, and the shift stays for the rest of the call.)
   */
  private popOne(atMs: number): void {
    const r = this.jb.pop(atMs);
    if (r.kind === 'frame') {
      // Handed over on arrival already: its playout slot has nothing left to do.
      if (r.seq <= this.deliveredSeq) return;
      // The buffer may skip a gap after a wait (or restart after a stall): conceal each chunk skipped.
      this.concealThrough(r.seq - 1);
      this.deliveredSeq = r.seq;
      this.lastFrame.set(r.payload);
      this.concealRun = 0;
      this.deliver(this.lastFrame);
    } else if (r.kind === 'concealed' && r.skipped) {
      this.concealThrough(r.seq);
    } else {
      return;
    }
    this.deliverInOrder();
  }

  /** One concealed frame per chunk after the last one handed over, up to `seq` (at most MAX_CONCEALED_RUN). */
  private concealThrough(seq: number): void {
    if (this.deliveredSeq < 0 || seq <= this.deliveredSeq) return;
    for (let s = Math.max(this.deliveredSeq + 1, seq - MAX_CONCEALED_RUN + 1); s <= seq; s++) {
      if (this.format.codec === 'l16') concealL16(this.lastFrame, this.concealed, ++this.concealRun);
      else conceal(this.lastFrame, this.concealed, ++this.concealRun);
      this.deliver(this.concealed);
    }
    this.deliveredSeq = seq;
  }

  private emitDueMarks(nowMs: number): void {
    while (this.emulatedMarks.length > 0 && this.emulatedMarks[0]!.dueMs <= nowMs) {
      const { name } = this.emulatedMarks.shift()!;
      this.counters.marksHeard++;
      this.onEmulatedMark?.(name);
    }
  }

  stats(): CarrierTransportStats {
    return { jitter: this.jb.stats(), ...this.counters, invalidReasons: { ...this.invalidReasons } };
  }

  /** Sends the filled part of the current batch (a full one in place; a partial one, at a mark, in a frame of its size). */
  private flushBatch(): void {
    const n = this.outFill;
    this.outFill = 0;
    if (n === 0 || this.outBinary) return;
    let msg = this.outFrame;
    if (n === this.outBatch) {
      base64Into(this.outBytes, this.outFrame, this.payloadOffset);
    } else {
      const slot = base64Chars(this.outBytes.length);
      const part = base64Chars(n * this.frameBytes);
      msg = new Uint8Array(this.outFrame.length - slot + part);
      msg.set(this.outFrame.subarray(0, this.payloadOffset), 0);
      base64Into(this.outBytes.subarray(0, n * this.frameBytes), msg, this.payloadOffset);
      msg.set(this.outFrame.subarray(this.payloadOffset + slot), this.payloadOffset + part);
    }
    if (this.ws.send(msg, false) === 2) this.counters.outFramesDropped += n;
    else this.counters.outFrames += n;
  }

  private setStreamSid(sid: string): void {
    this.streamSid = sid;
    this.streamSidBytes = Buffer.from(sid, 'utf8');
    const t = this.protocol.mediaTemplate(sid, this.format, this.outBatch);
    if (t.kind === 'binary') this.outBinary = true;
    else ({ frame: this.outFrame, payloadOffset: this.payloadOffset } = t);
  }
}

function sameBytes(b: Uint8Array, start: number, end: number, want: Uint8Array): boolean {
  if (end - start !== want.length) return false;
  for (let i = 0; i < want.length; i++) if (b[start + i] !== want[i]) return false;
  return true;
}

function trim(set: Set<string>): void {
  while (set.size > MAX_PENDING_MARKS) set.delete(set.values().next().value as string);
}
