/**
 * Outbound audio of one call: PCM samples at the transport rate, drained in 20 ms frames by the
 * pacer. It also remembers which text each stretch of samples speaks, so a barge-in can tell
 * exactly what the caller heard.
 *
 * Bound and overflow policy: the queue holds `capacitySeconds` (default 120 s) of audio, in at
 * most one block more than that (the first one partly played). TTS runs faster than real time, so
 * the queue can grow; when it is full, further audio is dropped (and counted) rather than growing
 * memory: a two-minute monologue is not a conversation. The samples
 * live in blocks of one second from the process's pool (playout-blocks.ts): taken as audio
 * arrives, given back once played, so a call that is not speaking holds none (issue 13: memory
 * per idle call) and a long answer allocates nothing once the pool has warmed up.
 */
import { giveBlock, takeBlock } from './playout-blocks.js';

const BLOCK_SECONDS = 1;
/** Characters per second of speech (~170 words a minute): the length of a sentence whose audio is still arriving. */
const SPOKEN_CHARS_PER_SECOND = 16;

export interface SpokenSegment {
  text: string;
  /** Cumulative sample index (since the turn's first sample) where this text starts / ends. */
  startSample: number;
  endSample: number;
  /** `endSegment()` was called: before that the segment runs to whatever has been enqueued. */
  ended: boolean;
}

export class PlayoutQueue {
  /** The queued audio, oldest block first: read from `readPos` of the first, written at `writePos` of the last. */
  private readonly blocks: Int16Array[] = [];
  private readonly blockSamples: number;
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
    this.blockSamples = sampleRateHz * BLOCK_SECONDS;
  }

  /** Samples the queue's blocks can hold now (0 when nothing is queued). */
  get allocatedSamples(): number {
    return this.blocks.length * this.blockSamples;
  }

  get queuedSamples(): number {
    return this.size;
  }

  get frameSamples(): number {
    return (this.sampleRateHz / 1000) * 20;
  }

  /** Copies samples in. Returns how many were accepted. */
  enqueue(samples: Int16Array): number {
    const n = Math.min(this.capacitySamples - this.size, samples.length);
    this.droppedSamples += samples.length - n;
    let src = 0;
    while (src < n) {
      if (this.blocks.length === 0 || this.writePos === this.blockSamples) {
        this.blocks.push(takeBlock(this.blockSamples));
        this.writePos = 0;
      }
      const run = Math.min(n - src, this.blockSamples - this.writePos);
      copySamples(samples, src, this.blocks[this.blocks.length - 1]!, this.writePos, run);
      this.writePos += run;
      src += run;
    }
    this.size += n;
    this.enqueuedSamples += n;
    return n;
  }

  /** Marks the text spoken by the samples enqueued from now until `endSegment()`. */
  beginSegment(text: string): void {
    this.segments.push({ text, startSample: this.enqueuedSamples, endSample: this.enqueuedSamples, ended: false });
  }

  endSegment(): void {
    const last = this.segments[this.segments.length - 1];
    if (last) {
      last.endSample = this.enqueuedSamples;
      last.ended = true;
    }
  }

  /**
   * Fills `dst` (one frame) from the queue; a partial last frame is padded with silence, unless
   * `partialOk` is false (more audio of the same speech is coming: a frame padded now would put
   * a gap of silence inside it). Returns false when nothing was taken.
   */
  takeFrame(dst: Int16Array, partialOk = true): boolean {
    if (this.size === 0 || (!partialOk && this.size < dst.length)) return false;
    const n = Math.min(dst.length, this.size);
    let off = 0;
    while (off < n) {
      const block = this.blocks[0]!;
      // The last block is read up to where it is written; the others to their end.
      const end = this.blocks.length === 1 ? this.writePos : this.blockSamples;
      const run = Math.min(n - off, end - this.readPos);
      copySamples(block, this.readPos, dst, off, run);
      this.readPos += run;
      off += run;
      if (this.readPos === end) this.releaseFront();
    }
    if (n < dst.length) dst.fill(0, n);
    this.size -= n;
    this.sentSamples += n;
    return true;
  }

  /** The first block has been played to where it was written: back to the pool (the queue may now be empty). */
  private releaseFront(): void {
    giveBlock(this.blocks.shift()!);
    this.readPos = 0;
    if (this.blocks.length === 0) this.writePos = 0;
  }

  /** Drops everything queued (barge-in). */
  flush(): void {
    for (const block of this.blocks) giveBlock(block);
    this.blocks.length = 0;
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
      // A segment still streaming ends at what has arrived so far; one without audio (yet, or
      // ever: its TTS failed) was not heard, however far the played audio goes.
      const end = s.ended ? s.endSample : this.enqueuedSamples;
      if (end === s.startSample) {
        if (heardSamples > s.startSample) continue;
        break;
      }
      if (heardSamples >= end && s.ended) {
        parts.push(s.text);
        continue;
      }
      if (heardSamples > s.startSample) {
        const words = s.text.split(/\s+/);
        // An open segment's length is not known yet: at least what has arrived, at least its text
        // at a brisk speaking rate.
        const length = s.ended ? end - s.startSample : Math.max(end - s.startSample, (s.text.length / SPOKEN_CHARS_PER_SECOND) * this.sampleRateHz);
        const fraction = Math.min(1, (heardSamples - s.startSample) / length);
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
