/**
 * Issue 23: the engine drain's timing on a simulated clock (`media-engine/drain.ts`) and the
 * placement rule that keeps new sessions off a draining node (`pickNode`).
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { createLogger } from '../../../shared/logger.js';
import { pickNode, type EngineNode } from '../../../shared/registry/index.js';
import { DRAIN_GOODBYE_TEXT, SHUTDOWN_REASON, startDrain, type DrainOutcome } from '../../../media-engine/drain.js';
import type { CallActor } from '../../../media-engine/session/actor.js';

const logger = createLogger({ level: 'silent' });

/** A call that records its shutdown and leaves the map `endAfterMs` later (its goodbye). */
function fakeCalls(clock: SimulatedClock, ids: string[], endAfterMs = 500) {
  const calls = new Map<string, CallActor>();
  const shutdowns: Array<[string, string]> = [];
  for (const id of ids) {
    calls.set(id, {
      shutdown: (text: string, reason: string) => {
        shutdowns.push([text, reason]);
        clock.setTimeout(() => calls.delete(id), endAfterMs);
      },
    } as unknown as CallActor);
  }
  return { calls, shutdowns };
}

async function settle(clock: SimulatedClock, done: Promise<DrainOutcome>, stepMs: number, maxSteps: number): Promise<DrainOutcome | undefined> {
  let out: DrainOutcome | undefined;
  void done.then((o) => (out = o));
  for (let i = 0; i < maxSteps && !out; i++) {
    await Promise.resolve();
    clock.advance(stepMs);
    await new Promise((r) => setImmediate(r));
  }
  return out;
}

describe('engine drain', () => {
  it('marks the node draining first, then waits for calls to end by themselves (idle for the settle time)', async () => {
    const clock = new SimulatedClock(0);
    const { calls, shutdowns } = fakeCalls(clock, ['a', 'b']);
    let marked = 0;
    const drain = startDrain({ clock, logger, calls, prewarmed: () => 0, markDraining: async () => void marked++ }, { timeoutMs: 60_000, settleMs: 2000, pollMs: 100 });
    expect(marked).toBe(1);
    clock.setTimeout(() => calls.delete('a'), 5000);
    clock.setTimeout(() => calls.delete('b'), 9000);
    const out = await settle(clock, drain.done, 100, 1000);
    expect(out).toMatchObject({ how: 'idle', ended: 2, remaining: 0 });
    // Not before the last call ended plus the settle time.
    expect(out!.tookMs).toBeGreaterThanOrEqual(11_000);
    expect(out!.tookMs).toBeLessThan(11_500);
    expect(shutdowns).toEqual([]);
  });

  it('a pre-warmed session keeps the node from counting as idle', async () => {
    const clock = new SimulatedClock(0);
    let prewarmed = 1;
    clock.setTimeout(() => (prewarmed = 0), 4000);
    const drain = startDrain({ clock, logger, calls: new Map(), prewarmed: () => prewarmed, markDraining: async () => {} }, { timeoutMs: 60_000, settleMs: 1000, pollMs: 100 });
    const out = await settle(clock, drain.done, 100, 1000);
    expect(out!.how).toBe('idle');
    expect(out!.tookMs).toBeGreaterThanOrEqual(5000);
  });

  it('a session placed here but not yet connected keeps the node from counting as idle', async () => {
    // An outbound call placed just before the mark: its stream comes when the callee answers, 6 s later.
    const clock = new SimulatedClock(0);
    let pending = 1;
    let asked = 0;
    clock.setTimeout(() => (pending = 0), 6000);
    const drain = startDrain(
      { clock, logger, calls: new Map(), prewarmed: () => 0, markDraining: async () => {}, pendingSessions: async () => (asked++, pending) },
      { timeoutMs: 60_000, settleMs: 1000, pollMs: 100, pendingPollMs: 250 },
    );
    const out = await settle(clock, drain.done, 100, 1000);
    expect(out!.how).toBe('idle');
    expect(out!.tookMs).toBeGreaterThanOrEqual(7000);
    expect(out!.tookMs).toBeLessThan(7600);
    // Polled while draining, not after.
    const askedWhenDone = asked;
    await settle(clock, new Promise(() => {}), 100, 20);
    expect(asked).toBe(askedWhenDone);
  });

  it('idle needs a count asked within the idle stretch', async () => {
    const clock = new SimulatedClock(0);
    // The registry answers only after 3 s: the earlier zero calls and pre-warms say nothing about it.
    const slow = startDrain(
      { clock, logger, calls: new Map(), prewarmed: () => 0, markDraining: async () => {}, pendingSessions: () => new Promise((r) => clock.setTimeout(() => r(0), 3000)) },
      { timeoutMs: 60_000, settleMs: 500, pollMs: 100, pendingPollMs: 250 },
    );
    expect((await settle(clock, slow.done, 100, 1000))!.tookMs).toBeGreaterThanOrEqual(3000);
  });

  it('while the registry cannot count, the last count stands; past pendingUnknownMaxMs it counts none', async () => {
    const clock = new SimulatedClock(0);
    // One session on its way, then the registry goes (errors, or "just reconnected": undefined).
    const answers: Array<number | undefined | Error> = [1, undefined, new Error('redis down')];
    const pendingSessions = async () => {
      const a = answers.length > 1 ? answers.shift() : answers[0];
      if (a instanceof Error) throw a;
      return a;
    };
    const drain = startDrain(
      { clock, logger, calls: new Map(), prewarmed: () => 0, markDraining: async () => {}, pendingSessions },
      { timeoutMs: 60_000, settleMs: 500, pollMs: 100, pendingPollMs: 250, pendingUnknownMaxMs: 8000 },
    );
    const out = await settle(clock, drain.done, 100, 1000);
    expect(out!.how).toBe('idle');
    expect(out!.tookMs).toBeGreaterThanOrEqual(8000);
    expect(out!.tookMs).toBeLessThan(9500);
    // Without a count ever, the unknown stretch counts from the drain's start.
    const never = startDrain(
      { clock, logger, calls: new Map(), prewarmed: () => 0, markDraining: async () => {}, pendingSessions: () => Promise.reject(new Error('redis down')) },
      { timeoutMs: 60_000, settleMs: 500, pollMs: 100, pendingPollMs: 250, pendingUnknownMaxMs: 2000 },
    );
    const t = await settle(clock, never.done, 100, 1000);
    expect(t!.how).toBe('idle');
    expect(t!.tookMs).toBeGreaterThanOrEqual(2000);
    expect(t!.tookMs).toBeLessThan(3500);
  });

  it('at the deadline every remaining call is told to say goodbye and end with server_shutdown', async () => {
    const clock = new SimulatedClock(0);
    const { calls, shutdowns } = fakeCalls(clock, ['a', 'b', 'c'], 3000);
    const drain = startDrain({ clock, logger, calls, prewarmed: () => 0, markDraining: async () => {} }, { timeoutMs: 10_000, pollMs: 100 });
    const out = await settle(clock, drain.done, 100, 1000);
    expect(shutdowns).toEqual([
      [DRAIN_GOODBYE_TEXT, SHUTDOWN_REASON],
      [DRAIN_GOODBYE_TEXT, SHUTDOWN_REASON],
      [DRAIN_GOODBYE_TEXT, SHUTDOWN_REASON],
    ]);
    expect(out).toMatchObject({ how: 'deadline', ended: 3, remaining: 0 });
    expect(out!.tookMs).toBeGreaterThanOrEqual(13_000);
    expect(out!.tookMs).toBeLessThan(13_500);
  });

  it('stops waiting on force (a second signal), leaving the calls to close()', async () => {
    const clock = new SimulatedClock(0);
    const { calls, shutdowns } = fakeCalls(clock, ['a']);
    const drain = startDrain({ clock, logger, calls, prewarmed: () => 0, markDraining: async () => {} }, { timeoutMs: 3_600_000, pollMs: 100 });
    await settle(clock, new Promise(() => {}), 100, 10);
    drain.force();
    const out = await settle(clock, drain.done, 100, 5);
    expect(out).toMatchObject({ how: 'forced', remaining: 1 });
    expect(shutdowns).toEqual([]);
  });

  it('survives a registry that cannot be told (the drain goes on)', async () => {
    const clock = new SimulatedClock(0);
    const drain = startDrain({ clock, logger, calls: new Map(), prewarmed: () => 0, markDraining: () => Promise.reject(new Error('redis down')) }, { timeoutMs: 10_000, settleMs: 500, pollMs: 100 });
    expect((await settle(clock, drain.done, 100, 100))!.how).toBe('idle');
  });
});

describe('placement', () => {
  const node = (nodeId: string, load: number, draining?: boolean): EngineNode => ({ nodeId, wsUrl: `ws://${nodeId}`, capacity: 10, load, updatedAtMs: 0, ...(draining ? { draining } : {}) });

  it('never picks a draining node, even the least loaded one', () => {
    expect(pickNode([node('a', 0, true), node('b', 9)])?.nodeId).toBe('b');
    expect(pickNode([node('a', 0, true)])).toBeUndefined();
    expect(pickNode([node('a', 3), node('b', 1)])?.nodeId).toBe('b');
  });
});
