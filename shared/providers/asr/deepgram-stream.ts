/**
 * One Deepgram live stream: the connection lifecycle, audio buffering and replay, and the message
 * mapping. States: connecting -> open -> (reconnecting -> open)* -> ending -> done.
 *
 * Audio bookkeeping uses absolute byte offsets since the stream started (AudioRing). `connBase` is
 * the offset the current socket's t=0 corresponds to, so a Results `start+duration` (seconds on
 * that socket) maps back to caller audio: everything before it is final and leaves the ring.
 */
import alawmulaw from 'alawmulaw';
import type WebSocket from 'ws';
import { backoffDelayMs } from '../../backoff.js';
import type { Clock, TimerHandle } from '../../clock.js';
import { AsyncQueue } from '../async-queue.js';
import type { ProviderError, ProviderErrorCode } from '../errors.js';
import { parseJsonChunk } from '../sse.js';
import type { AsrEvent, AsrStream, AsrStreamOptions } from '../types.js';
import { AudioRing } from './audio-ring.js';
import type { DeepgramAsrOptions } from './deepgram.js';

export type DeepgramResolvedOptions = Required<Omit<DeepgramAsrOptions, 'warmFormat' | 'clock' | 'baseUrl' | 'model' | 'language' | 'outbound' | 'random'>> & {
  clock: Clock;
  random?: () => number;
};

/** Wire bytes for one pushed frame. Mu-law passes through untouched (no resampling, no re-encode). */
export function deepgramWireBytes(frame: Int16Array | Uint8Array, encoding: 'linear16' | 'mulaw'): Uint8Array {
  if (frame instanceof Uint8Array) return frame; // already wire bytes (mu-law, or S16LE bytes)
  if (encoding === 'mulaw') return alawmulaw.mulaw.encode(frame);
  return new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength); // little-endian host
}

type State = 'connecting' | 'open' | 'reconnecting' | 'ending' | 'done';

/** AsrEvent's error variant plus our stable code (types.ts has no `code`; this stays assignable). */
export type DeepgramErrorEvent = { type: 'error'; message: string; recoverable: boolean; code: ProviderErrorCode };

/**
 * Undelivered events. Overflow policy: drop the oldest `interim` (each interim supersedes the
 * previous one anyway); if none is queued, drop the oldest event of any kind.
 */
const MAX_QUEUED_EVENTS = 512;

export class DeepgramStream implements AsrStream {
  private state: State = 'connecting';
  private ws: WebSocket | null = null;
  private readonly events = new AsyncQueue<AsrEvent>(MAX_QUEUED_EVENTS);
  private readonly ring: AudioRing;
  private readonly bytesPerSecond: number;
  private connBase = 0;
  private attempts = 0;
  private endRequested = false;
  private finalizePending = false;
  private audioSinceTick = false;
  private keepAlive: TimerHandle | undefined;
  private timer: TimerHandle | undefined;
  /**
   * Frames joined into the next message (`sendChunkMs` of audio). One `ws` send of a 20 ms frame
   * cost ~14 us of the event loop (masking, framing, a socket write: measured 2026-11-29), as
   * much as the rest of a call's per-frame work.
   */
  private readonly batch: Uint8Array;
  private batchFill = 0;
  private readonly abort = new AbortController();

  constructor(
    private readonly o: DeepgramResolvedOptions,
    private readonly s: AsrStreamOptions,
    private readonly connect: (signal: AbortSignal) => Promise<WebSocket>,
    warm: Promise<WebSocket> | undefined,
  ) {
    this.bytesPerSecond = s.sampleRateHz * (s.encoding === 'mulaw' ? 1 : 2);
    this.ring = new AudioRing(this.msToBytes(o.connectBufferMs));
    this.batch = new Uint8Array(Math.max(1, this.msToBytes(o.sendChunkMs)));
    void this.open(warm);
  }

  push(frame: Int16Array | Uint8Array): void {
    if (this.state === 'done' || this.endRequested) return;
    const bytes = deepgramWireBytes(frame, this.s.encoding);
    if (this.batchFill + bytes.length > this.batch.length) this.sendBatch();
    // A frame as long as a whole message goes alone (sendChunkMs 0 or 20, or a large push).
    if (bytes.length >= this.batch.length) return this.sendAudio(bytes);
    this.batch.set(bytes, this.batchFill);
    this.batchFill += bytes.length;
    if (this.batchFill === this.batch.length) this.sendBatch();
  }

  /** The joined frames so far, now (before Finalize and CloseStream: the vendor must hear them first). */
  private sendBatch(): void {
    if (this.batchFill === 0) return;
    const n = this.batchFill;
    this.batchFill = 0;
    this.sendAudio(this.batch.subarray(0, n));
  }

  /** Into the replay ring (a copy: the ring owns it), and onto the socket when it is open. */
  private sendAudio(bytes: Uint8Array): void {
    const copy = this.ring.append(bytes);
    if (this.state === 'open' && this.ws) {
      this.ws.send(copy);
      this.audioSinceTick = true;
    }
  }

  flush(): void {
    if (this.state === 'done' || this.endRequested) return;
    this.sendBatch();
    if (this.state === 'open') this.sendControl('Finalize');
    else this.finalizePending = true;
  }

  end(): void {
    if (this.state === 'done' || this.endRequested) return;
    this.sendBatch();
    this.endRequested = true;
    if (this.state === 'open') this.beginEnding();
  }

  close(): void {
    if (this.state === 'done') return;
    this.abort.abort(); // stops an in-flight connect
    const ws = this.ws;
    this.finish();
    if (ws) ws.readyState === ws.OPEN ? ws.close(1000) : ws.terminate();
  }

  /** Single consumer. Leaving the loop early (`break`) closes the stream: no orphaned socket. */
  [Symbol.asyncIterator](): AsyncIterator<AsrEvent> {
    return {
      next: () => this.events.next(),
      return: () => {
        this.close();
        return this.events.return();
      },
    };
  }

  // ------------------------------------------------------------ connection lifecycle

  private async open(warm?: Promise<WebSocket>): Promise<void> {
    let ws: WebSocket | undefined;
    try {
      if (warm) ws = await warm.catch(() => undefined);
      if (ws && ws.readyState !== ws.OPEN) ws = undefined; // the warm socket died while waiting
      ws ??= await this.connect(this.abort.signal);
    } catch (e) {
      this.onConnectFailed(e as ProviderError);
      return;
    }
    if (this.state === 'done') {
      ws.close(1000);
      return;
    }
    this.ws = ws;
    this.state = 'open';
    ws.on('message', (data, isBinary) => {
      // A socket event handler that throws is an uncaught exception: the whole process. Whatever a
      // vendor (or a tenant's base_url) sends is at most this call's error.
      try {
        this.onMessage(data, isBinary);
      } catch (err) {
        this.emitError('MALFORMED_RESPONSE', `deepgram: message not understood (${(err as Error).message})`, true);
      }
    });
    ws.on('error', () => undefined); // 'close' always follows; that is where we act
    ws.on('close', (code) => this.onClose(ws, code));
    // Replay: on the first connect the ring holds what arrived while connecting (<= connectBufferMs);
    // after a drop it holds the unfinished utterance (<= replayBufferMs). Both start at connBase.
    this.connBase = this.ring.startOffset;
    for (const f of this.ring.all()) ws.send(f.bytes);
    this.ring.setCap(this.msToBytes(this.o.replayBufferMs));
    if (this.finalizePending) this.sendControl('Finalize');
    this.finalizePending = false;
    this.audioSinceTick = false;
    this.keepAlive = this.o.clock.setInterval(() => this.onKeepAliveTick(), this.o.keepAliveMs);
    if (this.endRequested) this.beginEnding();
  }

  private onConnectFailed(e: ProviderError): void {
    if (this.state === 'done' || e.code === 'ABORTED') return;
    const permanent = e.code === 'AUTH_FAILED' || e.code === 'BAD_REQUEST' || e.code === 'OUTBOUND_REFUSED';
    this.retryOrGiveUp(e.code, `deepgram: connect failed: ${e.message}`, permanent, e.retryAfterMs);
  }

  private onClose(ws: WebSocket, code: number): void {
    if (ws !== this.ws) return;
    this.ws = null;
    this.o.clock.clearInterval(this.keepAlive);
    if (this.state === 'done') return;
    if (this.state === 'ending') return this.finish(); // CloseStream answered: normal end
    this.retryOrGiveUp('STREAM_INTERRUPTED', `deepgram: socket dropped (close code ${code})`, false);
  }

  private retryOrGiveUp(code: ProviderErrorCode, message: string, permanent: boolean, retryAfterMs?: number): void {
    this.attempts++;
    if (permanent || this.attempts > this.o.maxReconnectAttempts) {
      this.emitError(code, `${message}; giving up`, false);
      return this.finish();
    }
    this.emitError(code, `${message}; reconnecting (attempt ${this.attempts})`, true);
    this.state = 'reconnecting';
    // Full jitter: every stream on a node dropped by one vendor blip must not reconnect in step.
    const backoffMs = retryAfterMs ?? backoffDelayMs(this.attempts, { baseMs: this.o.reconnectBackoffMs, random: this.o.random });
    this.timer = this.o.clock.setTimeout(() => void this.open(), backoffMs);
  }

  private beginEnding(): void {
    this.state = 'ending';
    this.sendControl('CloseStream');
    // The server closes after its final Metadata; if it never does, do not hang the caller.
    this.timer = this.o.clock.setTimeout(() => {
      const ws = this.ws;
      this.finish();
      ws?.terminate();
    }, this.o.endTimeoutMs);
  }

  private finish(): void {
    if (this.state === 'done') return;
    this.state = 'done';
    this.ws = null;
    this.o.clock.clearInterval(this.keepAlive);
    this.o.clock.clearTimeout(this.timer);
    this.events.end();
  }

  private onKeepAliveTick(): void {
    // Pushes paused mid-message (an answering-machine hold, a client that stopped sending): the
    // partial message goes now rather than with the next push.
    if (!this.audioSinceTick) this.sendBatch();
    // Deepgram closes after 10 s without audio or KeepAlive; a tick with no audio sends one.
    if (this.state === 'open' && !this.audioSinceTick) this.sendControl('KeepAlive');
    this.audioSinceTick = false;
  }

  private sendControl(type: 'KeepAlive' | 'Finalize' | 'CloseStream'): void {
    // Control messages are TEXT frames: a binary KeepAlive is read as audio (a known bug source).
    if (this.ws && this.ws.readyState === this.ws.OPEN) this.ws.send(JSON.stringify({ type }), { binary: false });
  }

  // ------------------------------------------------------------ messages

  private onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) return;
    let msg: Record<string, unknown>;
    try {
      msg = parseJsonChunk('deepgram', data.toString());
    } catch (err) {
      // One bad message (not JSON, or JSON that is not an object: `null`, a number) does not poison
      // the stream: report it and keep listening. The URL is a tenant's: anything may arrive.
      return this.emitError('MALFORMED_RESPONSE', (err as Error).message, true);
    }
    switch (msg.type) {
      case 'Results':
        // Transcription is flowing: the connection is demonstrably healthy. (Not on Metadata: a
        // server that greets and then drops every connection would reset the count for ever.)
        this.attempts = 0;
        return this.onResults(msg);
      case 'UtteranceEnd':
        this.attempts = 0;
        return this.emit({ type: 'utterance_end' });
      case 'SpeechStarted': {
        this.attempts = 0;
        const atSec = typeof msg.timestamp === 'number' ? msg.timestamp : 0;
        return this.emit({ type: 'speech_started', atMs: Math.round(this.offsetToMs(this.connBase) + atSec * 1000) });
      }
      default:
        return; // Metadata and future types
    }
  }

  private onResults(msg: Record<string, unknown>): void {
    // Typed by hand: a field of the wrong type is read as absent, never trusted.
    const channel = msg.channel as { alternatives?: unknown } | null | undefined;
    const first: unknown = Array.isArray(channel?.alternatives) ? channel.alternatives[0] : undefined;
    const alt = (typeof first === 'object' && first !== null ? first : {}) as { transcript?: unknown; confidence?: unknown };
    const text = typeof alt.transcript === 'string' ? alt.transcript : '';
    const confidence = typeof alt.confidence === 'number' && Number.isFinite(alt.confidence) ? alt.confidence : undefined;
    const speechFinal = msg.speech_final === true;
    if (msg.is_final === true || speechFinal) {
      // Everything up to the end of this segment is fixed: it no longer needs replaying.
      const endSec = typeof msg.start === 'number' && typeof msg.duration === 'number' ? msg.start + msg.duration : undefined;
      const sentEnd = this.ring.endOffset;
      this.ring.trimBefore(endSec === undefined ? sentEnd : Math.min(sentEnd, this.connBase + this.secToBytes(endSec)));
      // Empty finals are normal (noise); only an empty end-of-turn marker is worth passing on.
      if (text !== '' || speechFinal) this.emit({ type: 'final', text, confidence, endOfTurn: speechFinal });
    } else if (text !== '') {
      this.emit({ type: 'interim', text, confidence });
    }
  }

  private emit(ev: AsrEvent): void {
    if (this.state === 'done') return;
    if (this.events.push(ev)) return;
    if (!this.events.dropFirst((e) => e.type === 'interim')) this.events.dropFirst(() => true);
    this.events.push(ev);
  }

  private emitError(code: ProviderErrorCode, message: string, recoverable: boolean): void {
    const ev: DeepgramErrorEvent = { type: 'error', code, message, recoverable };
    this.emit(ev);
  }

  private msToBytes(ms: number): number {
    return this.secToBytes(ms / 1000);
  }

  /** Rounded down to a whole sample so offsets never split a 16-bit sample. */
  private secToBytes(sec: number): number {
    const sampleBytes = this.s.encoding === 'mulaw' ? 1 : 2;
    return Math.floor((sec * this.bytesPerSecond) / sampleBytes) * sampleBytes;
  }

  private offsetToMs(offset: number): number {
    return (offset / this.bytesPerSecond) * 1000;
  }
}

/** For tests and diagnostics: is this error event ours, with a code? */
export function asrErrorCode(ev: AsrEvent): ProviderErrorCode | undefined {
  return ev.type === 'error' ? (ev as Partial<DeepgramErrorEvent>).code : undefined;
}

