import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { PacedMap, Pacer, type Paced } from '../../../media-engine/session/pacer.js';

/** A paced entry that records the times it was paced at. */
function recorder(): Paced & { at: number[] } {
  const at: number[] = [];
  return { at, pace: (now) => void at.push(now) };
}

/** A started pacer over an empty set, on a simulated clock at 0. */
function started(periodMs = 10) {
  const clock = new SimulatedClock(0);
  const set = new PacedMap<Paced>();
  const pacer = new Pacer(clock, set, periodMs);
  pacer.start();
  return { clock, set, pacer };
}

describe('Pacer', () => {
  it('runs no timer while there is nothing to pace, and starts when an entry arrives', () => {
    const { clock, set, pacer } = started();
    expect(pacer.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    clock.advance(1000);
    expect(pacer.ticks).toBe(0);

    const call = recorder();
    set.set('a', call);
    expect(pacer.running).toBe(true);
    clock.advance(30);
    expect(call.at).toEqual([1010, 1020, 1030]);
  });

  it('stops on the first tick that finds the set empty, and resumes on the next entry', () => {
    const { clock, set, pacer } = started();
    set.set('a', recorder());
    clock.advance(20);
    set.delete('a');
    clock.advance(10);
    expect(pacer.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
    const ticks = pacer.ticks;
    clock.advance(5000);
    expect(pacer.ticks).toBe(ticks);

    const next = recorder();
    set.set('b', next);
    clock.advance(10);
    expect(next.at).toEqual([5040]);
  });

  it('does not count the idle pause as a late tick', () => {
    const { clock, set, pacer } = started();
    set.set('a', recorder());
    clock.advance(10);
    set.delete('a');
    clock.advance(10);
    clock.advance(10_000);
    set.set('b', recorder());
    clock.advance(30);
    expect(pacer.maxTickLateMs).toBe(0);
  });

  it('never starts before start() nor after stop()', () => {
    const clock = new SimulatedClock(0);
    const set = new PacedMap<Paced>();
    const pacer = new Pacer(clock, set, 5);
    set.set('a', recorder());
    expect(pacer.running).toBe(false);
    pacer.start();
    expect(pacer.running).toBe(true);
    pacer.stop();
    expect(pacer.running).toBe(false);
    set.set('b', recorder());
    expect(pacer.running).toBe(false);
    expect(clock.pendingTimers).toBe(0);
  });
});
