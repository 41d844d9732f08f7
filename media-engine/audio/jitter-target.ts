/**
 * The jitter buffer's target depth (jitter-buffer.ts): RFC 3550 interarrival jitter estimated
 * from each arrival, turned into a target of 3x the jitter rounded up to whole frames and clamped
 * to [minDepthMs, maxDepthMs]. The target grows at once (a stall is already hurting) and shrinks
 * one frame per second once the jitter calms. Apart from the ring so the adaptation policy can be
 * read, and changed, without the slot bookkeeping around it.
 */

/** 3x the mean deviation covers most of a jitter distribution without a huge delay. */
const JITTER_MULTIPLIER = 3;
/** The target shrinks by one frame per this interval once the jitter calms. */
const SHRINK_INTERVAL_MS = 1000;

export class JitterTarget {
  /** Current target depth; starts at minDepthMs. */
  depthMs: number;
  /** RFC 3550 interarrival jitter estimate, ms. */
  jitterMs = 0;
  private lastChangeMs = Number.NEGATIVE_INFINITY;
  private lastArrivalMs = Number.NaN;
  private lastTimestampMs = Number.NaN;

  constructor(
    private readonly frameMs: number,
    private readonly minDepthMs: number,
    private readonly maxDepthMs: number,
  ) {
    this.depthMs = minDepthMs;
  }

  /** RFC 3550 section 6.4.1 interarrival jitter, in ms, over frames in arrival order. */
  onArrival(timestampMs: number, arrivalMs: number): void {
    if (!Number.isNaN(this.lastArrivalMs)) {
      const d = arrivalMs - this.lastArrivalMs - (timestampMs - this.lastTimestampMs);
      this.jitterMs += (Math.abs(d) - this.jitterMs) / 16;
      const wantedMs = this.wantedMs();
      if (wantedMs > this.depthMs) {
        this.depthMs = wantedMs; // grow at once: a stall is already hurting
        this.lastChangeMs = arrivalMs;
      }
    }
    this.lastArrivalMs = arrivalMs;
    this.lastTimestampMs = timestampMs;
  }

  /** Called on every pop: shrinks by one frame when the jitter allows and a second has passed. */
  onPop(nowMs: number): void {
    if (this.wantedMs() < this.depthMs && nowMs - this.lastChangeMs >= SHRINK_INTERVAL_MS) {
      this.depthMs -= this.frameMs;
      this.lastChangeMs = nowMs;
    }
  }

  reset(): void {
    this.depthMs = this.minDepthMs;
    this.lastChangeMs = Number.NEGATIVE_INFINITY;
    this.jitterMs = 0;
    this.lastArrivalMs = this.lastTimestampMs = Number.NaN;
  }

  private wantedMs(): number {
    const ms = Math.ceil((JITTER_MULTIPLIER * this.jitterMs) / this.frameMs) * this.frameMs;
    return Math.min(this.maxDepthMs, Math.max(this.minDepthMs, ms));
  }
}
