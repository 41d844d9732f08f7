/**
 * The recent caller audio an ASR stream still holds, addressed by absolute byte offset since the
 * stream started (dropped bytes keep counting, so offsets stay caller time). Always contiguous:
 * both the overflow policy and `trimBefore` remove from the oldest end only.
 */
export class AudioRing {
  private frames: Array<{ bytes: Uint8Array; start: number }> = [];
  private held = 0;
  private end = 0;
  /** Bytes dropped by the overflow policy (for diagnostics). */
  droppedBytes = 0;

  /**
   * @param capBytes bound on held bytes. Overflow policy: drop the oldest whole frames (realtime
   * audio: the newest speech matters most). Adjustable with `setCap`.
   */
  constructor(private capBytes: number) {}

  /** Copies `bytes` in (callers reuse their frame buffers) and returns the copy. */
  append(bytes: Uint8Array): Uint8Array {
    const copy = new Uint8Array(bytes); // one copy per message: the ring owns it, the socket sends it
    this.frames.push({ bytes: copy, start: this.end });
    this.end += copy.byteLength;
    this.held += copy.byteLength;
    this.enforceCap();
    return copy;
  }

  setCap(capBytes: number): void {
    this.capBytes = capBytes;
    this.enforceCap();
  }

  /** Offset of the oldest held byte (== endOffset when empty). */
  get startOffset(): number {
    return this.frames[0]?.start ?? this.end;
  }

  /** Offset just past the newest byte. */
  get endOffset(): number {
    return this.end;
  }

  get heldBytes(): number {
    return this.held;
  }

  /**
   * Forgets the audio before `offset` (covered by a final result): whole entries, and the covered
   * head of the entry `offset` falls inside (entries are messages of up to 250 ms, and a replay
   * after a drop must not repeat finalized audio).
   */
  trimBefore(offset: number): void {
    let n = 0;
    while (n < this.frames.length) {
      const f = this.frames[n]!;
      if (f.start + f.bytes.byteLength > offset) break;
      this.held -= f.bytes.byteLength;
      n++;
    }
    if (n > 0) this.frames.splice(0, n);
    const head = this.frames[0];
    if (head && head.start < offset) {
      const cut = offset - head.start;
      this.frames[0] = { bytes: head.bytes.subarray(cut), start: offset };
      this.held -= cut;
    }
  }

  /** Held frames, oldest first. */
  all(): ReadonlyArray<{ bytes: Uint8Array; start: number }> {
    return this.frames;
  }

  private enforceCap(): void {
    let n = 0;
    while (this.held > this.capBytes && n < this.frames.length - 1) {
      const f = this.frames[n]!;
      this.held -= f.bytes.byteLength;
      this.droppedBytes += f.bytes.byteLength;
      n++;
    }
    if (n > 0) this.frames.splice(0, n);
  }
}
