/**
 * One pacer per node sends every call's due outbound frames on a 10 ms tick. Each call keeps its
 * own real-time schedule (frame n leaves at start + n * 20 ms, minus a small lead), so the tick
 * period only bounds lateness, not pitch. Lateness of each tick is recorded for benchmarks.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';

export interface Paced {
  pace(nowMs: number): void;
}

export class Pacer {
  private timer?: TimerHandle;
  private lastTickMs = 0;
  /** Worst gap between ticks beyond the period since the last `resetStats()`. */
  maxTickLateMs = 0;
  ticks = 0;

  constructor(
    private readonly clock: Clock,
    private readonly calls: Map<string, Paced>,
    readonly periodMs = 10,
  ) {}

  start(): void {
    if (this.timer) return;
    this.lastTickMs = this.clock.monotonicMs();
    this.timer = this.clock.setInterval(() => this.tick(), this.periodMs);
  }

  tick(): void {
    const now = this.clock.monotonicMs();
    const late = now - this.lastTickMs - this.periodMs;
    if (late > this.maxTickLateMs) this.maxTickLateMs = late;
    this.lastTickMs = now;
    this.ticks++;
    for (const c of this.calls.values()) c.pace(now);
  }

  resetStats(): void {
    this.maxTickLateMs = 0;
    this.ticks = 0;
  }

  stop(): void {
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
  }
}
