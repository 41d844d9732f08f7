/**
 * Allocation-free latency histograms (fixed 0.05 ms buckets up to `maxMs`, one overflow bucket
 * plus the exact max) and small helpers for sample arrays. A histogram can be serialised over IPC
 * and merged, so engine-side and client-side processes report into one table.
 */

export interface HistogramJson {
  resolutionMs: number;
  minMs: number;
  counts: number[];
  overflow: number;
  maxMs: number;
  count: number;
  sumMs: number;
}

export class Histogram {
  readonly counts: Uint32Array;
  overflow = 0;
  maxMs = -Infinity;
  count = 0;
  sumMs = 0;

  /**
   * @param minMs lowest bucketed value (smaller values land in bucket 0; default 0)
   * @param maxMs highest bucketed value (above: overflow, the exact max is still kept; default 2000)
   * @param resolutionMs bucket width (default 0.05 ms)
   */
  constructor(
    readonly minMs = 0,
    readonly maxMs_ = 2000,
    readonly resolutionMs = 0.05,
  ) {
    this.counts = new Uint32Array(Math.ceil((maxMs_ - minMs) / resolutionMs) + 1);
  }

  record(ms: number): void {
    this.count++;
    this.sumMs += ms;
    if (ms > this.maxMs) this.maxMs = ms;
    const i = Math.floor((ms - this.minMs) / this.resolutionMs);
    if (i >= this.counts.length) this.overflow++;
    else this.counts[i < 0 ? 0 : i]!++;
  }

  /** Value at quantile q (0..1): upper edge of the bucket holding it; the exact max for q = 1. */
  quantile(q: number): number {
    if (this.count === 0) return NaN;
    if (q >= 1) return this.maxMs;
    const rank = Math.ceil(q * this.count);
    let seen = 0;
    for (let i = 0; i < this.counts.length; i++) {
      seen += this.counts[i]!;
      if (seen >= rank) return Math.min(this.maxMs, this.minMs + (i + 1) * this.resolutionMs);
    }
    return this.maxMs;
  }

  get meanMs(): number {
    return this.count ? this.sumMs / this.count : NaN;
  }

  reset(): void {
    this.counts.fill(0);
    this.overflow = 0;
    this.maxMs = -Infinity;
    this.count = 0;
    this.sumMs = 0;
  }

  toJSON(): HistogramJson {
    return { resolutionMs: this.resolutionMs, minMs: this.minMs, counts: Array.from(this.counts), overflow: this.overflow, maxMs: this.maxMs, count: this.count, sumMs: this.sumMs };
  }

  static fromJSON(j: HistogramJson): Histogram {
    const h = new Histogram(j.minMs, j.minMs + (j.counts.length - 1) * j.resolutionMs, j.resolutionMs);
    h.counts.set(j.counts);
    h.overflow = j.overflow;
    h.maxMs = j.maxMs;
    h.count = j.count;
    h.sumMs = j.sumMs;
    return h;
  }

  /** Adds another histogram with the same layout. */
  merge(o: Histogram | HistogramJson): void {
    const counts = o instanceof Histogram ? o.counts : o.counts;
    for (let i = 0; i < this.counts.length && i < counts.length; i++) this.counts[i]! += counts[i]!;
    this.overflow += o.overflow;
    this.maxMs = Math.max(this.maxMs, o.maxMs);
    this.count += o.count;
    this.sumMs += o.sumMs;
  }
}

/** p-quantile (0..1) of a sample array (nearest rank), NaN when empty. */
export function quantile(values: number[], q: number): number {
  if (values.length === 0) return NaN;
  const sorted = [...values].sort((a, b) => a - b);
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1));
  return sorted[rank]!;
}

export function median(values: number[]): number {
  return quantile(values, 0.5);
}

export interface Summary {
  count: number;
  p50: number;
  p99: number;
  max: number;
}

export function summarize(values: number[]): Summary {
  return { count: values.length, p50: quantile(values, 0.5), p99: quantile(values, 0.99), max: values.length ? Math.max(...values) : NaN };
}

export function summarizeHistogram(h: Histogram): Summary {
  return { count: h.count, p50: h.quantile(0.5), p99: h.quantile(0.99), max: h.count ? h.maxMs : NaN };
}
