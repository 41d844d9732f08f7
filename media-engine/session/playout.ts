/**
 * Outbound audio of one call: a preallocated ring of PCM samples at the transport rate, drained
 * in 20 ms frames by the pacer. It also remembers which text each stretch of samples speaks, so a
 * barge-in can tell exactly what the caller heard.
 *
 * Bound and overflow policy: the ring holds `capacitySeconds` (default 120 s) of audio. TTS runs
 * faster than real time, so the queue can grow; when it is full, further audio is dropped (and
 * counted) rather than growing memory: a two-minute monologue is not a conversation. The ring
 * is allocated at the first audio (2 s) and doubles on demand (a copy per doubling, not per
 * frame), so a call that has not spoken yet holds nothing and an idle one kilobytes, not 120 s
 * (issue 13: memory per idle call).
 */

const INITIAL_SECONDS = 2;

const EMPTY = new Int16Array(0);

export interface SpokenSegment {
  text: string;
  /** Cumulative sample index (since the turn's first sample) where this text starts / ends. */
  startSample: number;
  endSample: number;
}

export class PlayoutQueue {
  private ring: Int16Array;
  private readonly capacitySamples: number;
  private readPos = 0;
  private writePos = 0;
  private size = 0;
  /** Samples handed to the transport since `resetTurn()`. */
  sentSamples = 0;
  /** Samples enqueued since `resetTurn()`. */
  enqueuedSamples = 0;
  droppedSamples = 0;
  readonly segments: SpokenSegment[] = [];

  constructor(
    readonly sampleRateHz: number,
    capacitySeconds = 120,
  ) {
    this.capacitySamples = sampleRateHz * capacitySeconds;
    this.ring = EMPTY;
  }

  /** Samples the ring can hold now (0 until the first audio). */
  get allocatedSamples(): number {
    return this.ring.length;
  }

  get queuedSamples(): number {
    return this.size;
  }

  get frameSamples(): number {
    return (this.sampleRateHz / 1000) * 20;
  }

  /** Copies samples in. Returns how many were accepted. */
  enqueue(samples: Int16Array): number {
    if (this.size + samples.length > this.ring.length && this.ring.length < this.capacitySamples) this.grow(this.size + samples.length);
    const free = this.ring.length - this.size;
    const n = Math.min(free, samples.length);
    this.droppedSamples += samples.length - n;
    let remaining = n;
    let src = 0;
    while (remaining > 0) {
      const run = Math.min(remaining, this.ring.length - this.writePos);
      copySamples(samples, src, this.ring, this.writePos, run);
      this.writePos = (this.writePos + run) % this.ring.length;
      src += run;
      remaining -= run;
    }
    this.size += n;
    this.enqueuedSamples += n;
    return n;
  }

  /** Re-lays the queued samples at the start of a larger ring (rare: doubles up to the cap). */
  private grow(needed: number): void {
    let len = Math.max(this.ring.length, Math.min(this.capacitySamples, this.sampleRateHz * INITIAL_SECONDS));
    while (len < needed && len < this.capacitySamples) len = Math.min(this.capacitySamples, len * 2);
    const next = new Int16Array(len);
    const first = Math.min(this.size, this.ring.length - this.readPos);
    next.set(this.ring.subarray(this.readPos, this.readPos + first), 0);
    next.set(this.ring.subarray(0, this.size - first), first);
    this.ring = next;
    this.readPos = 0;
    this.writePos = this.size % len;
  }

  /** Marks the text spoken by the samples enqueued from now until `endSegment()`. */
  beginSegment(text: string): void {
    this.segments.push({ text, startSample: this.enqueuedSamples, endSample: this.enqueuedSamples });
  }

  endSegment(): void {
    const last = this.segments[this.segments.length - 1];
    if (last) last.endSample = this.enqueuedSamples;
  }

  /**
   * Fills `dst` (one frame) from the queue; a partial last frame is padded with silence.
   * Returns false when nothing was queued.
   */
  takeFrame(dst: Int16Array): boolean {
    if (this.size === 0) return false;
    const n = Math.min(dst.length, this.size);
    let remaining = n;
    let off = 0;
    while (remaining > 0) {
      const run = Math.min(remaining, this.ring.length - this.readPos);
      copySamples(this.ring, this.readPos, dst, off, run);
      this.readPos = (this.readPos + run) % this.ring.length;
      off += run;
      remaining -= run;
    }
    if (n < dst.length) dst.fill(0, n);
    this.size -= n;
    this.sentSamples += n;
    return true;
  }

  /** Drops everything queued (barge-in). */
  flush(): void {
    this.readPos = this.writePos = this.size = 0;
  }

  /** Starts position accounting for a new turn. */
  resetTurn(): void {
    this.flush();
    this.sentSamples = 0;
    this.enqueuedSamples = 0;
    this.segments.length = 0;
  }

  /**
   * The text the caller heard when `heardSamples` of this turn had played: whole segments, and
   * the words of a partly played segment in proportion to how much of it played.
   */
  heardText(heardSamples: number): string {
    const parts: string[] = [];
    for (const s of this.segments) {
      if (heardSamples >= s.endSample) {
        parts.push(s.text);
        continue;
      }
      if (heardSamples > s.startSample && s.endSample > s.startSample) {
        const words = s.text.split(/\s+/);
        const fraction = (heardSamples - s.startSample) / (s.endSample - s.startSample);
        const count = Math.floor(words.length * fraction);
        if (count > 0) parts.push(words.slice(0, count).join(' '));
      }
      break;
    }
    return parts.join(' ').trim();
  }
}

/**
 * Copies `n` samples from `src[from..]` to `dst[to..]`. A loop rather than `dst.set(src.subarray())`:
 * the subarray is a new view object every frame (measured in the engine's allocation profile), and
 * a frame's few hundred samples copy as fast either way.
 */
function copySamples(src: Int16Array, from: number, dst: Int16Array, to: number, n: number): void {
  for (let i = 0; i < n; i++) dst[to + i] = src[from + i]!;
}
