import { describe, expect, it } from 'vitest';
import { Placements, STALE_AFTER_MS } from '../../../control-plane/voice/placements.js';
import type { EngineNode } from '../../../shared/registry/index.js';

const node = (load: number, updatedAtMs: number): EngineNode => ({ nodeId: 'A', wsUrl: 'ws://a', load, capacity: 10, updatedAtMs });

describe('Placements', () => {
  it('keeps a placement through the first heartbeat read after it and drops it at the next one', () => {
    const p = new Placements();
    p.noteListing([node(0, 100)], p.beginListing());
    p.add('A', 1_000);
    // A listing fetch starts: the first placement precedes its read, the second may not.
    const inFlight = p.beginListing();
    p.add('A', 1_001);
    p.noteListing([node(0, 100)], inFlight);
    expect(p.withPending(node(0, 100)).load).toBe(2);
    // A heartbeat other than the one that read showed was written after it: it counts the first.
    p.noteListing([node(1, 200)], p.beginListing());
    expect(p.withPending(node(1, 200)).load).toBe(2);
    // The second was based on heartbeat 200; heartbeat 300 counts it too.
    p.noteListing([node(2, 300)], p.beginListing());
    expect(p.withPending(node(2, 300)).load).toBe(2);
    p.noteListing([node(1, 400)], p.beginListing());
    expect(p.withPending(node(1, 400)).load).toBe(1);
  });

  it('after a quiet spell, a heartbeat stamped well after a placement covers it at once', () => {
    const p = new Placements();
    p.add('A', 10_000);
    p.noteListing([node(1, 10_000 + STALE_AFTER_MS)], p.beginListing());
    expect(p.withPending(node(1, 0)).load).toBe(2);
    p.noteListing([node(1, 10_001 + STALE_AFTER_MS)], p.beginListing());
    expect(p.withPending(node(1, 0)).load).toBe(1);
  });

  it('undoes a placement whose write failed, and forgets a node that left the listing', () => {
    const p = new Placements();
    const undo = p.add('A', 5);
    p.add('A', 5);
    undo();
    expect(p.withPending(node(0, 0)).load).toBe(1);
    p.noteListing([], p.beginListing());
    expect(p.withPending(node(0, 0)).load).toBe(0);
  });

  it('forgets the placement of a session that ended, once; a covered one is not counted twice', () => {
    const p = new Placements();
    p.add('A', 5, 's1');
    p.add('A', 5, 's2');
    p.forget('s1');
    p.forget('s1');
    p.forget('unknown');
    expect(p.withPending(node(0, 0)).load).toBe(1);
    // s2 covered by a heartbeat: forgetting it afterwards changes nothing.
    p.noteListing([node(1, 5 + STALE_AFTER_MS + 1)], p.beginListing());
    p.add('A', 9_000, 's3');
    p.forget('s2');
    expect(p.withPending(node(1, 0)).load).toBe(2);
  });
});
