/** In-process fixed-window counters for rate limits. */
import type { RateLimitWindows } from '../types.js';
import type { MemorySweep, Sweepable } from './sweep.js';

export class MemoryRateLimitWindows implements RateLimitWindows, Sweepable {
  private readonly windows = new Map<string, { count: number; endsAtMs: number }>();

  constructor(private readonly sweeper: MemorySweep) {}

  get size(): number {
    return this.windows.size;
  }

  sweep(nowMs: number): void {
    for (const [k, w] of this.windows) if (w.endsAtMs <= nowMs) this.windows.delete(k);
  }

  async incrWindow(key: string, windowMs: number): Promise<number> {
    const now = this.sweeper.clock.now();
    const w = this.windows.get(key);
    if (!w || w.endsAtMs <= now) {
      this.sweeper.maybeSweep();
      this.sweeper.room(this.windows, key, 'rate-limit windows');
      this.windows.set(key, { count: 1, endsAtMs: now + windowMs });
      return 1;
    }
    w.count++;
    return w.count;
  }
}
