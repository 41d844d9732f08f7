/**
 * Browser transport: binary frames of 16 kHz 16-bit LE mono PCM both ways, JSON events out.
 * We never prepend a WAV header to outgoing audio (clients should still strip one if present, as
 * the spec allows). Inbound chunks of any size (>= 10 bytes) are re-framed into 20 ms frames.
 */
import type { Clock } from '../../shared/clock.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { CallTransport } from '../session/transport.js';
import { endSocket } from './socket-end.js';

export interface BrowserSocket {
  send(message: ArrayBufferView | string, isBinary?: boolean): number;
  getBufferedAmount(): number;
  end(code?: number, reason?: string): void;
}

/** Frames below this many bytes are discarded (spec). */
export const MIN_FRAME_BYTES = 10;
/** Past this much unsent data we drop audio frames instead of growing memory (slow client). */
export const MAX_BUFFERED_BYTES = 512 * 1024;
/**
 * Inbound audio is accepted at real time plus this much burst (a tab throttled in the background
 * catches up; a stalled connection delivers late). Beyond it whole messages are dropped and
 * counted: a client pushing 64 KiB (2 s) messages as fast as it can would otherwise make the node
 * run VAD and ASR for hundreds of seconds of audio per second (issue 11: no input may freeze
 * the node; the carrier transport bounds its rate by the chunk window).
 */
export const INBOUND_BURST_MS = 3000;
const IN_RATE_HZ = 16000;
/** 16-bit LE PCM can be read through an Int16Array view only where the host is little-endian. */
const HOST_LITTLE_ENDIAN = new Uint8Array(new Uint16Array([1]).buffer)[0] === 1;

export class BrowserTransport implements CallTransport {
  readonly kind = 'browser' as const;
  readonly inRateHz = 16000;
  readonly outRateHz = 16000;
  readonly leadMs: number;
  droppedFrames = 0;
  /** Inbound messages dropped: smaller than MIN_FRAME_BYTES, or beyond real time plus the burst. */
  droppedInMessages = 0;
  /** Inbound audio budget in samples (token bucket refilled at 16 kHz of the clock's time). */
  private inBudget = IN_RATE_HZ * (INBOUND_BURST_MS / 1000);
  private inBudgetAtMs: number;
  private closed = false;
  private view?: Uint8Array;
  private viewOf?: ArrayBufferLike;
  private readonly inFrame = new Int16Array(320);
  private inFill = 0;
  /** The low byte of a sample whose high byte is in the next message (-1: none). */
  private oddByte = -1;
  /** The next message starts with the high byte of a sample an over-budget message cut: skip it. */
  private skipByte = false;

  constructor(
    private readonly ws: BrowserSocket,
    private readonly clock: Clock,
    opts: { leadMs?: number } = {},
  ) {
    this.leadMs = opts.leadMs ?? 100;
    this.inBudgetAtMs = clock.monotonicMs();
  }

  sendEvent(ev: ServerEvent): void {
    if (this.closed) return;
    this.ws.send(JSON.stringify({ ...ev, server_ts: this.clock.now() }), false);
  }

  sendAudio(frame: Int16Array): void {
    if (this.closed) return;
    if (this.ws.getBufferedAmount() > MAX_BUFFERED_BYTES) {
      this.droppedFrames++;
      return;
    }
    if (this.viewOf !== frame.buffer || !this.view || this.view.byteOffset !== frame.byteOffset) {
      this.view = new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength);
      this.viewOf = frame.buffer;
    }
    if (this.ws.send(this.view, true) === 2) this.droppedFrames++;
  }

  clearAudio(): void {
    // Browsers are told by events (`user_started_speaking` / `interim_transcription`) to flush.
  }

  mark(): void {
    // Browsers report playback with `playback_done`.
  }

  close(code: number, reason: string): void {
    if (this.closed) return;
    this.closed = true;
    endSocket(this.ws, code, reason);
  }

  markClosed(): void {
    this.closed = true;
  }

  /**
   * Re-frames an inbound binary message into 320-sample frames and hands each to `onFrame`
   * (the frame buffer is reused: consume it synchronously).
   */
  receive(data: ArrayBuffer, onFrame: (frame: Int16Array) => void): void {
    // Under MIN_FRAME_BYTES a message is not audio (spec: discarded): the stream goes on as if it
    // had not been sent.
    if (data.byteLength < MIN_FRAME_BYTES) {
      this.droppedInMessages++;
      return;
    }
    if (!this.takeBudget(data.byteLength >> 1)) {
      this.droppedInMessages++;
      // Audio beyond the budget still moved the stream's position: keep its sample boundary. A
      // held low byte belonged to a sample the drop cut; after an odd number of bytes the next
      // message starts with the high byte of a cut sample, skipped.
      const odd = (this.oddByte >= 0 || this.skipByte) !== ((data.byteLength & 1) === 1);
      this.oddByte = -1;
      this.skipByte = odd;
      return;
    }
    if (HOST_LITTLE_ENDIAN && this.oddByte < 0 && !this.skipByte) this.receiveAligned(data, onFrame);
    else this.receiveBytes(data, onFrame);
  }

  /**
   * The stream is on a sample boundary (every client that sends whole samples): copy samples, not
   * bytes: 65-110 ns per 640-byte message against 1.1 us for per-sample byte assembly (measured
   * 2026-11-29, docs/benchmarks.md).
   */
  private receiveAligned(data: ArrayBuffer, onFrame: (frame: Int16Array) => void): void {
    const n = data.byteLength >> 1;
    const frame = this.inFrame;
    let fill = this.inFill;
    const samples = new Int16Array(data, 0, n);
    let i = 0;
    while (i < n) {
      const take = Math.min(n - i, frame.length - fill);
      // A message of exactly one frame (what browsers and our SDK send) is one memcpy; other
      // chunkings take a view per piece (a sample loop measured 10x slower than the view's memcpy).
      if (take === n) frame.set(samples, fill);
      else frame.set(samples.subarray(i, i + take), fill);
      fill += take;
      i += take;
      if (fill === frame.length) {
        fill = 0;
        this.inFill = 0;
        onFrame(frame);
      }
    }
    this.inFill = fill;
    if (data.byteLength & 1) this.oddByte = new Uint8Array(data, data.byteLength - 1, 1)[0]!;
  }

  /** A sample straddles the previous message and this one (odd-sized chunks), a drop left the stream mid-sample, or a big-endian host. */
  private receiveBytes(data: ArrayBuffer, onFrame: (frame: Int16Array) => void): void {
    const bytes = new Uint8Array(data);
    let i = 0;
    if (this.skipByte) {
      this.skipByte = false;
      i = 1;
    } else if (this.oddByte >= 0) {
      this.pushSample((bytes[0]! << 8) | this.oddByte, onFrame);
      this.oddByte = -1;
      i = 1;
    }
    for (; i + 1 < bytes.length; i += 2) this.pushSample((bytes[i + 1]! << 8) | bytes[i]!, onFrame);
    if (i < bytes.length) this.oddByte = bytes[i]!;
  }

  /** True if `samples` fit in the inbound budget (and takes them). */
  private takeBudget(samples: number): boolean {
    const now = this.clock.monotonicMs();
    const max = IN_RATE_HZ * (INBOUND_BURST_MS / 1000);
    this.inBudget = Math.min(max, this.inBudget + ((now - this.inBudgetAtMs) * IN_RATE_HZ) / 1000);
    this.inBudgetAtMs = now;
    if (samples > this.inBudget) return false;
    this.inBudget -= samples;
    return true;
  }

  private pushSample(u16: number, onFrame: (frame: Int16Array) => void): void {
    this.inFrame[this.inFill++] = u16 > 0x7fff ? u16 - 0x10000 : u16;
    if (this.inFill === this.inFrame.length) {
      this.inFill = 0;
      onFrame(this.inFrame);
    }
  }
}
