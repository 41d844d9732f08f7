import { describe, expect, it } from 'vitest';
import { backoffDelayMs, sleepBackoff } from '../../../shared/backoff.js';
import { SimulatedClock } from '../../../shared/clock.js';

describe('backoff with full jitter', () => {
  it('draws uniformly below an exponential ceiling that is capped', () => {
    const top = () => 0.999999;
    expect([1, 2, 3, 4, 5].map((n) => backoffDelayMs(n, { baseMs: 100, maxMs: 1000, random: top }))).toEqual([99, 199, 399, 799, 999]);
    expect(backoffDelayMs(3, { baseMs: 100, maxMs: 1000, random: () => 0 })).toBe(0);
    expect(backoffDelayMs(2, { baseMs: 100, maxMs: 1000, random: () => 0.5 })).toBe(100);
  });

  it('stays finite and capped for absurd retry numbers and out-of-range randoms', () => {
    expect(backoffDelayMs(10_000, { baseMs: 100, maxMs: 5000, random: () => 0.5 })).toBe(2500);
    expect(backoffDelayMs(1, { baseMs: 100, maxMs: 5000, random: () => 7 })).toBe(100);
    expect(backoffDelayMs(1, { baseMs: 100, maxMs: 5000, random: () => -1 })).toBe(0);
  });

  it('spreads: many draws cover the range instead of one value', () => {
    const draws = new Set(Array.from({ length: 200 }, () => backoffDelayMs(4, { baseMs: 100, maxMs: 5000 })));
    expect(draws.size).toBeGreaterThan(50);
    expect(Math.max(...draws)).toBeLessThan(800);
  });

  it('sleeps on the injected clock and rejects at once on abort (timer cleared)', async () => {
    const clock = new SimulatedClock();
    const done = sleepBackoff(clock, 2, new AbortController().signal, () => new Error('aborted'), { baseMs: 100, random: () => 0.5 });
    expect(clock.pendingTimers).toBe(1);
    clock.advance(100);
    await expect(done).resolves.toBe(100);

    const ac = new AbortController();
    const cancelled = sleepBackoff(clock, 5, ac.signal, () => new Error('aborted'), { baseMs: 100, random: () => 0.5 });
    ac.abort();
    await expect(cancelled).rejects.toThrow('aborted');
    expect(clock.pendingTimers).toBe(0);
  });
});
