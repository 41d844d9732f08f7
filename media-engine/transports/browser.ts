/**
 * Browser transport: binary frames of 16 kHz 16-bit LE mono PCM both ways, JSON events out.
 * We never prepend a WAV header to outgoing audio (clients should still strip one if present, as
 * the spec allows). Inbound chunks of any size (>= 10 bytes) are re-framed into 20 ms frames.
 */
import type { Clock } from '../../shared/clock.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { CallTransport } from '../session/transport.js';

export interface BrowserSocket {
  send(message: ArrayBufferView | string, isBinary?: boolean): number;
  getBufferedAmount(): number;
  end(code?: number, reason?: string): void;
}

/** Frames below this many bytes are discarded (spec). */
export const MIN_FRAME_BYTES = 10;
/** Past this much unsent data we drop audio frames instead of growing memory (slow client). */
export const MAX_BUFFERED_BYTES = 512 * 1024;

export class BrowserTransport implements CallTransport {
  readonly kind = 'browser' as const;
  readonly outRateHz = 16000;
  readonly leadMs: number;
  droppedFrames = 0;
  private closed = false;
  private view?: Uint8Array;
  private viewOf?: ArrayBufferLike;
  private readonly inFrame = new Int16Array(320);
  private inFill = 0;
  private oddByte = -1;

  constructor(
    private readonly ws: BrowserSocket,
    private readonly clock: Clock,
    opts: { leadMs?: number } = {},
  ) {
    this.leadMs = opts.leadMs ?? 100;
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
    try {
      this.ws.end(code, reason.slice(0, 120));
    } catch {
      // already closed by the peer
    }
  }

  markClosed(): void {
    this.closed = true;
  }

  /**
   * Re-frames an inbound binary message into 320-sample frames and hands each to `onFrame`
   * (the frame buffer is reused: consume it synchronously).
   */
  receive(data: ArrayBuffer, onFrame: (frame: Int16Array) => void): void {
    if (data.byteLength < MIN_FRAME_BYTES) return;
    const bytes = new Uint8Array(data);
    let i = 0;
    if (this.oddByte >= 0) {
      this.pushSample((bytes[0] << 8) | this.oddByte, onFrame);
      this.oddByte = -1;
      i = 1;
    }
    for (; i + 1 < bytes.length; i += 2) this.pushSample((bytes[i + 1] << 8) | bytes[i], onFrame);
    if (i < bytes.length) this.oddByte = bytes[i];
  }

  private pushSample(u16: number, onFrame: (frame: Int16Array) => void): void {
    this.inFrame[this.inFill++] = u16 > 0x7fff ? u16 - 0x10000 : u16;
    if (this.inFill === this.inFrame.length) {
      this.inFill = 0;
      onFrame(this.inFrame);
    }
  }
}
