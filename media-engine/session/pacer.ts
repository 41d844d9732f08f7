/**
 * One pacer per node sends every call's due outbound frames on a 10 ms tick. Each call keeps its
 * own real-time schedule (frame n leaves at start + n * 20 ms, minus a small lead), so the tick
 * period only bounds lateness, not pitch. Lateness of each tick is recorded for benchmarks.
 *
 * The timer runs only while there is something to pace: a tick that finds the set empty stops it,
 * and adding an entry to the `PacedMap` starts it again. An idle node's two pacers (300 timer
 * wake-ups a second) cost ~5 % of a core on a 2-vCPU VM, measured 2026-11-28 (docs/benchmarks.md).
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';

export interface Paced {
  pace(nowMs: number): void;
}

/** The set a pacer walks: a Map that tells its pacer when an entry arrives (so it can wake). */
export class PacedMap<V extends Paced> extends Map<string, V> {
  onAdd?: () => void;

  override set(key: string, value: V): this {
    super.set(key, value);
    this.onAdd?.();
    return this;
  }
}

export class Pacer {
  private timer?: TimerHandle;
  /** Between start() and stop(): the timer runs whenever the set is not empty. */
  private enabled = false;
  private lastTickMs = 0;
  /** Worst gap between ticks beyond the period since the last `resetStats()` (idle pauses excluded). */
  maxTickLateMs = 0;
  ticks = 0;

  constructor(
    private readonly clock: Clock,
    private readonly calls: PacedMap<Paced>,
    readonly periodMs = 10,
  ) {
    calls.onAdd = () => this.wake();
  }

  start(): void {
    this.enabled = true;
    this.wake();
  }

  /** Whether the timer is running now (false while idle or stopped). */
  get running(): boolean {
    return this.timer !== undefined;
  }

  tick(): void {
    const now = this.clock.monotonicMs();
    const late = now - this.lastTickMs - this.periodMs;
    if (late > this.maxTickLateMs) this.maxTickLateMs = late;
    this.lastTickMs = now;
    this.ticks++;
    for (const c of this.calls.values()) c.pace(now);
    if (this.calls.size === 0) this.disarm();
  }

  resetStats(): void {
    this.maxTickLateMs = 0;
    this.ticks = 0;
  }

  stop(): void {
    this.enabled = false;
    this.disarm();
  }

  private wake(): void {
    if (!this.enabled || this.timer || this.calls.size === 0) return;
    this.lastTickMs = this.clock.monotonicMs();
    this.timer = this.clock.setInterval(() => this.tick(), this.periodMs);
  }

  private disarm(): void {
    if (!this.timer) return;
    this.clock.clearInterval(this.timer);
    this.timer = undefined;
  }
}
