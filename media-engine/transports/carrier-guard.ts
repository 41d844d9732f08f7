/**
 * Stateful checks on carrier input (issue 11, "one carrier frame freezes the node"): counters must
 * stay within a window of where the stream is, and a stream that keeps sending garbage is closed.
 * Pure, O(1) per frame, no timers: times come from the caller (the transport's Clock).
 */

export interface CounterWindowOptions {
  /** How far below the newest accepted value a value may be (reordering, late frames). */
  behind: number;
  /** How far above the newest accepted value a value may be, before elapsed time is added. */
  ahead: number;
  /** How much further ahead each elapsed millisecond allows (the counter's real-time rate). */
  perMs: number;
}

/**
 * Accepts a counter value v if `newest - behind <= v <= newest + ahead + perMs * elapsedMs`, where
 * `newest` is the highest value accepted so far (0 at `anchor`) and `elapsedMs` is the time since
 * it was accepted. A carrier cannot produce media faster than real time, so a stream that stalled
 * for 10 s may resume 500 chunks further on, but a single frame cannot jump to chunk 2e8. The
 * allowance is measured from the newest accepted value, so clock drift between carrier and node
 * never accumulates.
 */
export class CounterWindow {
  private newest = 0;
  private newestAtMs = 0;

  constructor(private readonly o: CounterWindowOptions) {}

  /** Starts the window at 0 (the first value a stream sends is near its start). */
  anchor(nowMs: number, value = 0): void {
    this.newest = value;
    this.newestAtMs = nowMs;
  }

  /** True (and the window moves) if `value` lies in the window; false leaves the window as it was. */
  accept(value: number, nowMs: number): boolean {
    if (value < this.newest - this.o.behind) return false;
    const elapsedMs = Math.max(0, nowMs - this.newestAtMs);
    if (value > this.newest + this.o.ahead + Math.floor(elapsedMs * this.o.perMs)) return false;
    if (value > this.newest) {
      this.newest = value;
      this.newestAtMs = nowMs;
    }
    return true;
  }
}

export interface GarbagePolicyOptions {
  /** Frames looked back over. Default 100. */
  windowFrames?: number;
  /** Invalid frames within the window beyond which the stream is closed. Default 20 (20 %). */
  maxInvalidInWindow?: number;
}

/**
 * "A stream that keeps sending garbage is closed": more than `maxInvalidInWindow` invalid frames
 * among the last `windowFrames` frames. A sliding ratio rather than a lifetime total, so an hour
 * of good audio with a rare bad frame is never cut, while a stream that is mostly garbage is
 * closed after at most 21 frames of it.
 */
export class GarbagePolicy {
  private readonly ring: Uint8Array;
  private pos = 0;
  private invalidInWindow = 0;
  readonly maxInvalidInWindow: number;

  constructor(o: GarbagePolicyOptions = {}) {
    this.ring = new Uint8Array(o.windowFrames ?? 100);
    this.maxInvalidInWindow = o.maxInvalidInWindow ?? 20;
  }

  /** Records one frame; true when the stream has now sent too much garbage. */
  record(invalid: boolean): boolean {
    const bit = invalid ? 1 : 0;
    this.invalidInWindow += bit - this.ring[this.pos]!;
    this.ring[this.pos] = bit;
    this.pos = (this.pos + 1) % this.ring.length;
    return this.invalidInWindow > this.maxInvalidInWindow;
  }

  get invalidRecent(): number {
    return this.invalidInWindow;
  }
}
