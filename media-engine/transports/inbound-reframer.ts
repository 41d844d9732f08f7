/**
 * Inbound audio of a carrier stream whose messages are not 20 ms each (docs/protocols.md: "Size is
 * not promised: derive duration from decoded length"). A sender of 10, 30, 40 or 128 ms messages
 * is one byte stream cut into 20 ms frames here, so nothing is cut off or padded into the caller's
 * audio. Frames are numbered on the stream's own 20 ms grid (frame k covers media time
 * [20(k-1), 20k) ms), the numbering a 20 ms sender's `chunk` has, so a stream may switch to this
 * mid-call and its frames keep their places in the jitter buffer.
 *
 * The carrier's `chunk` counts messages, so it cannot number frames: they follow arrival order (one
 * WebSocket, in order). Where the message carries the media timestamp (ms since the stream's start,
 * Twilio-family and Telnyx), it finds gaps: a message that starts more than GAP_MS after the audio
 * taken so far ends leaves the frames between them to the jitter buffer (concealed), and a message
 * not newer than the one before it (a duplicate, or out of order) is dropped: its place in the
 * stream has been taken already (a reordered message is lost, not put back: Telnyx does not
 * promise order, and its 20 ms streams keep the jitter buffer's reordering). Allocation-free: one
 * carry frame per stream, filled by a byte loop.
 */

const FRAME_MS = 20;
/** Timestamps need not step exactly (Twilio): a start this far past the audio taken is a gap. */
const GAP_MS = 40;

/** Where whole frames go: the jitter buffer push of the transport (a method bound once). */
export type FrameSink = (chunk: number, timestampMs: number, frame: Uint8Array) => void;

export class InboundReframer {
  private readonly carry: Uint8Array;
  private carryLen = 0;
  /** Chunk number of the frame the carry is filling. */
  private next: number;
  private lastTimestampMs = -1;
  private readonly bytesPerMs: number;

  constructor(
    private readonly frameBytes: number,
    private readonly fillByte: number,
    private readonly emit: FrameSink,
    /** The newest frame pushed before reframing began (0: none): the stream continues after it. */
    lastChunk: number,
  ) {
    this.carry = new Uint8Array(frameBytes);
    this.bytesPerMs = frameBytes / FRAME_MS;
    this.next = lastChunk + 1;
  }

  /**
   * Takes the first `n` bytes of `src`, a message starting at media time `timestampMs` (NaN when
   * the protocol's timestamp is not media time). Emits every frame it completes. False: dropped.
   */
  take(src: Uint8Array, n: number, timestampMs: number): boolean {
    if (!Number.isNaN(timestampMs)) {
      if (timestampMs <= this.lastTimestampMs) return false;
      this.lastTimestampMs = timestampMs;
      this.skipGap(timestampMs);
    }
    const fb = this.frameBytes;
    for (let i = 0; i < n; ) {
      const take = Math.min(fb - this.carryLen, n - i);
      const carry = this.carry;
      for (let j = 0, at = this.carryLen; j < take; j++) carry[at + j] = src[i + j]!;
      this.carryLen += take;
      i += take;
      if (this.carryLen === fb) this.emitCarry();
    }
    return true;
  }

  /** Media time up to which audio has been taken. */
  private takenMs(): number {
    return (this.next - 1) * FRAME_MS + this.carryLen / this.bytesPerMs;
  }

  private skipGap(timestampMs: number): void {
    if (timestampMs <= this.takenMs() + GAP_MS) return;
    // The partial frame before the gap goes out padded; the message starts at its own place.
    if (this.carryLen > 0) {
      this.carry.fill(this.fillByte, this.carryLen);
      this.emitCarry();
    }
    const frameIndex = Math.floor(timestampMs / FRAME_MS);
    this.next = Math.max(this.next, frameIndex + 1);
    // Whole samples: bytesPerMs is a whole number of samples (8 mu-law, 16 or 32 L16 bytes).
    const offset = Math.floor(timestampMs - frameIndex * FRAME_MS) * this.bytesPerMs;
    if (this.next === frameIndex + 1 && offset > 0) {
      this.carry.fill(this.fillByte, 0, offset);
      this.carryLen = offset;
    }
  }

  private emitCarry(): void {
    const chunk = this.next++;
    this.carryLen = 0;
    this.emit(chunk, (chunk - 1) * FRAME_MS, this.carry);
  }
}
