/**
 * The control plane's read cache (control-plane/cache/read-cache.ts): TTL on the injected clock,
 * bound, eviction, and the rule that a load in flight while an eviction happened stores nothing
 * (a change notice is never undone by a slow read of the old value).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { ReadCache } from '../../../control-plane/cache/read-cache.js';
import { deepFreeze } from '../../../control-plane/cache/freeze.js';

const make = (clock = new SimulatedClock(), over: Partial<{ max: number; ttlMs: number; enabled: boolean }> = {}) =>
  new ReadCache<{ v: number }>({ max: 3, ttlMs: 1000, clock, enabled: true, ...over });

describe('ReadCache', () => {
  it('loads once, then answers from memory until the TTL', async () => {
    const clock = new SimulatedClock();
    const c = make(clock);
    let loads = 0;
    const loader = async () => ({ v: ++loads });
    expect(await c.load('a', loader)).toEqual({ v: 1 });
    clock.advance(1000);
    expect(await c.load('a', loader)).toEqual({ v: 1 });
    clock.advance(1);
    expect(await c.load('a', loader)).toEqual({ v: 2 });
  });

  it('does not store undefined (negative results), and is bounded', async () => {
    const c = make();
    let loads = 0;
    expect(await c.load('missing', async () => (loads++, undefined))).toBeUndefined();
    expect(await c.load('missing', async () => (loads++, undefined))).toBeUndefined();
    expect(loads).toBe(2);
    for (const k of ['a', 'b', 'c', 'd']) await c.load(k, async () => ({ v: 1 }));
    expect(c.size).toBe(3);
    expect(c.get('a')).toBeUndefined();
  });

  it('a load that overlapped an eviction is returned but not stored', async () => {
    const c = make();
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const slow = c.load('a', async () => {
      await gate;
      return { v: 1 };
    });
    c.delete('other');
    release();
    expect(await slow).toEqual({ v: 1 });
    expect(c.get('a')).toBeUndefined();
    expect(await c.load('a', async () => ({ v: 2 }))).toEqual({ v: 2 });
    expect(c.get('a')).toEqual({ v: 2 });
  });

  it('concurrent misses of one key share one load; a miss after an eviction starts its own', async () => {
    const c = make();
    let loads = 0;
    const gates: Array<() => void> = [];
    const loader = () =>
      new Promise<{ v: number }>((resolve) => {
        const n = ++loads;
        gates.push(() => resolve({ v: n }));
      });
    const first = Array.from({ length: 100 }, () => c.load('a', loader));
    expect(loads).toBe(1);
    c.delete('other'); // a notice while the load is in flight: its answer may be stale
    const after = c.load('a', loader);
    expect(loads).toBe(2);
    gates[0]!();
    gates[1]!();
    expect(new Set((await Promise.all(first)).map((r) => r!.v))).toEqual(new Set([1]));
    expect(await after).toEqual({ v: 2 });
    expect(c.get('a')).toEqual({ v: 2 });
    // Settled loads leave: the next miss loads again; a failed load is shared, then forgotten.
    c.delete('a');
    const failing = [c.load('a', () => Promise.reject(new Error('db down'))), c.load('a', loader)];
    for (const p of failing) await expect(p).rejects.toThrow('db down');
    const again = c.load('a', loader);
    gates[2]!();
    expect(await again).toEqual({ v: 3 });
  });

  it('evicts by key, by predicate and all; stores nothing before enable()', async () => {
    const c = make(new SimulatedClock(), { max: 10 });
    for (const k of ['u1 w1', 'u1 w2', 'u2 w1']) await c.load(k, async () => ({ v: 1 }));
    c.deleteWhere((k) => k.endsWith(' w1'));
    expect([c.get('u1 w1'), c.get('u1 w2'), c.get('u2 w1')]).toEqual([undefined, { v: 1 }, undefined]);
    c.clear();
    expect(c.size).toBe(0);
    const off = make(new SimulatedClock(), { enabled: false });
    await off.load('a', async () => ({ v: 1 }));
    expect(off.size).toBe(0);
    off.enable();
    await off.load('a', async () => ({ v: 1 }));
    expect(off.size).toBe(1);
  });

  it('deepFreeze freezes nested objects and arrays, leaves byte arrays alone', () => {
    const v = deepFreeze({ a: { b: [1, { c: 2 }] }, bytes: new Uint8Array([1]) });
    expect(Object.isFrozen(v.a.b[1])).toBe(true);
    expect(() => (v.a.b as unknown[]).push(3)).toThrow(TypeError);
    v.bytes[0] = 9;
    expect(v.bytes[0]).toBe(9);
  });
});
