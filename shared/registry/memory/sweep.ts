/**
 * Expiry of the in-process registry, shared by its parts: what Redis would expire (sessions past
 * their connect deadline that no socket claimed, ended claims, dead nodes, calls, rate-limit
 * windows) is swept here, at most every `SWEEP_EVERY_MS` on the next write to any part, so nothing
 * grows without bound (issue 11). Each map also has a hard cap; a write beyond it is refused with
 * 503 rather than growing the heap.
 */
import type { Clock } from '../../clock.js';
import { RegistryUnavailableError } from '../types.js';

/** Sweep interval (on the injected clock). */
export const SWEEP_EVERY_MS = 5000;
/** Most sessions, calls or rate-limit windows held at once. */
export const MAX_ENTRIES = 100_000;

export interface Sweepable {
  /** Drops every entry expired at `nowMs`. */
  sweep(nowMs: number): void;
}

export class MemorySweep {
  private nextSweepAtMs = 0;
  private readonly parts: Sweepable[] = [];

  constructor(readonly clock: Clock) {}

  add(part: Sweepable): void {
    this.parts.push(part);
  }

  /** Sweeps every part now. */
  sweep(): void {
    const now = this.clock.now();
    this.nextSweepAtMs = now + SWEEP_EVERY_MS;
    for (const p of this.parts) p.sweep(now);
  }

  /** Called on writes: sweeps when the interval has passed. */
  maybeSweep(): void {
    if (this.clock.now() >= this.nextSweepAtMs) this.sweep();
  }

  /** Refuses a new entry in a full map (after a sweep): 503, never unbounded growth. */
  room(map: Map<string, unknown>, key: string, what: string): void {
    if (map.size < MAX_ENTRIES || map.has(key)) return;
    this.sweep();
    if (map.size >= MAX_ENTRIES) throw new RegistryUnavailableError(`in-process registry holds ${MAX_ENTRIES} ${what}`);
  }
}
