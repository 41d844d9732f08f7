/**
 * The registry's contracts, run against every implementation: the in-process registry and Redis
 * (one server: test/unit/telephony/call-registry.test.ts, test/unit/registry/invalidations.test.ts;
 * a real Redis Cluster: test/integration/registry.cluster.test.ts).
 *
 * Live calls: seats per pool, patches never resurrect an ended call, a delete is won once, lists
 * per owner and per pool, lookup by carrier sid. Invalidations: a notice reaches every subscriber
 * of every instance sharing the registry, the publisher's own subscribers at once (before
 * `publish` resolves) and exactly once; unsubscribed handlers get nothing; a throwing handler
 * does not starve the others.
 */
import { expect, it } from 'vitest';
import type { Registry, StoredCall } from '../../shared/registry/index.js';

export function call(id: string, over: Partial<StoredCall> = {}): StoredCall {
  const now = Date.now();
  return { callId: id, userId: 'u1', poolId: 'ws1', data: { status: 'initiated', n: 1 }, createdAtMs: now, expiresAtMs: now + 60_000, ...over };
}

/** The live-call contract; `make` returns a fresh registry (its own key prefix). */
export function liveCallContract(make: () => Promise<Registry>): void {
  it('stores, finds by sid, patches and lists', async () => {
    const reg = await make();
    expect(await reg.calls.putCall(call('c1', { providerCallSid: 'CA1' }))).toBe(true);
    expect(await reg.calls.getCall('c1')).toMatchObject({ callId: 'c1', userId: 'u1', poolId: 'ws1', providerCallSid: 'CA1', data: { status: 'initiated', n: 1 } });
    expect((await reg.calls.findCallBySid('CA1'))?.callId).toBe('c1');
    const patched = await reg.calls.patchCall('c1', { status: 'ringing', extra: { a: [1, 2] } }, 'CA9');
    expect(patched).toMatchObject({ providerCallSid: 'CA9', data: { status: 'ringing', n: 1, extra: { a: [1, 2] } } });
    expect((await reg.calls.findCallBySid('CA9'))?.callId).toBe('c1');
    await reg.calls.putCall(call('c2', { userId: 'u2', createdAtMs: Date.now() + 1 }));
    expect((await reg.calls.listCalls({ userId: 'u1' })).map((c) => c.callId)).toEqual(['c1']);
    expect((await reg.calls.listCalls({ poolId: 'ws1' })).map((c) => c.callId)).toEqual(['c1', 'c2']);
    expect(await reg.calls.listCalls({ userId: 'nobody' })).toEqual([]);
  });

  it('a delete is won once; a late patch never recreates the call', async () => {
    const reg = await make();
    await reg.calls.putCall(call('d1', { providerCallSid: 'CAd' }));
    const [a, b] = await Promise.all([reg.calls.deleteCall('d1'), reg.calls.deleteCall('d1')]);
    expect([a?.callId, b?.callId].filter(Boolean)).toEqual(['d1']);
    expect(await reg.calls.patchCall('d1', { status: 'in_progress' })).toBeUndefined();
    expect(await reg.calls.getCall('d1')).toBeUndefined();
    expect(await reg.calls.findCallBySid('CAd')).toBeUndefined();
    expect(await reg.calls.listCalls({ poolId: 'ws1' })).toEqual([]);
  });

  it('patchCallIfEmpty: of concurrent claims exactly one applies; a gone call is undefined', async () => {
    const reg = await make();
    await reg.calls.putCall(call('t1', { data: { status: 'in_progress', transferred_to: '' } }));
    const claims = await Promise.all(['+1', '+2', '+3'].map((to) => reg.calls.patchCallIfEmpty('t1', 'transferred_to', { transferred_to: to, status: 'x' })));
    const won = claims.filter((c) => c !== 'taken');
    expect(won).toHaveLength(1);
    const winner = (won[0] as StoredCall).data.transferred_to;
    expect((await reg.calls.getCall('t1'))?.data).toEqual({ status: 'x', transferred_to: winner });
    // An absent field counts as empty; a null one too.
    await reg.calls.putCall(call('t2'));
    expect(await reg.calls.patchCallIfEmpty('t2', 'transferred_to', { transferred_to: '+9' })).toMatchObject({ data: { transferred_to: '+9' } });
    await reg.calls.patchCall('t2', { transferred_to: null });
    expect(await reg.calls.patchCallIfEmpty('t2', 'transferred_to', { transferred_to: '+8' })).toMatchObject({ data: { transferred_to: '+8' } });
    expect(await reg.calls.patchCallIfEmpty('gone', 'transferred_to', { transferred_to: '+1' })).toBeUndefined();
  });

  it('refuses a call when the pool is full, and frees the seat on delete', async () => {
    const reg = await make();
    expect(await reg.calls.putCall(call('s1', { poolId: 'small' }), { seatLimit: 2 })).toBe(true);
    expect(await reg.calls.putCall(call('s2', { poolId: 'small' }), { seatLimit: 2 })).toBe(true);
    expect(await reg.calls.putCall(call('s3', { poolId: 'small' }), { seatLimit: 2 })).toBe(false);
    // Re-putting a call that already holds a seat is not a new seat.
    expect(await reg.calls.putCall(call('s2', { poolId: 'small' }), { seatLimit: 2 })).toBe(true);
    // Another pool is independent; no limit means no limit.
    expect(await reg.calls.putCall(call('s4', { poolId: 'other' }), { seatLimit: 1 })).toBe(true);
    expect(await reg.calls.putCall(call('s5', { poolId: 'small' }))).toBe(true);
    await reg.calls.deleteCall('s1');
    await reg.calls.deleteCall('s5');
    expect(await reg.calls.putCall(call('s3', { poolId: 'small' }), { seatLimit: 2 })).toBe(true);
    expect((await reg.calls.listCalls({ poolId: 'small' })).map((c) => c.callId).sort()).toEqual(['s2', 's3']);
  });

  it('seats are taken atomically under concurrency', async () => {
    const reg = await make();
    const results = await Promise.all(Array.from({ length: 10 }, (_, i) => reg.calls.putCall(call(`r${i}`, { poolId: 'race' }), { seatLimit: 3 })));
    expect(results.filter(Boolean)).toHaveLength(3);
  });
}

export /** Resolves with the first notice the predicate accepts; rejects after `ms`. */
async function nextNotice(reg: Registry, pred: (topic: string, key: string) => boolean, ms = 5000): Promise<[string, string]> {
  let unsub: (() => Promise<void>) | undefined;
  let timer: NodeJS.Timeout | undefined;
  try {
    return await new Promise<[string, string]>((resolve, reject) => {
      timer = setTimeout(() => reject(new Error('no notice within the deadline')), ms);
      void reg.invalidations
        .subscribe((t, k) => {
          if (pred(t, k)) resolve([t, k]);
        })
        .then((u) => (unsub = u), reject);
    });
  } finally {
    clearTimeout(timer);
    await unsub?.();
  }
}

/** The invalidation contract; `make` returns two instances sharing one registry. */
export function invalidationContract(make: () => Promise<[Registry, Registry]>): void {
  it('reach every subscriber, the publisher own ones at once and once only', async () => {
    const [a, b] = await make();
    const seenA: string[] = [];
    const seenB: string[] = [];
    await a.invalidations.subscribe((t, k) => seenA.push(`${t}:${k}`));
    await b.invalidations.subscribe((t, k) => seenB.push(`${t}:${k}`));
    const atB = nextNotice(b, (t, k) => t === 'agent' && k === 'a-2');
    const sent = a.invalidations.publish('agent', 'a-1');
    // Own subscribers: before publish resolves (the publishing replica never serves its old value).
    expect(seenA).toEqual(['agent:a-1']);
    expect(await sent).toBe(true);
    expect(await a.invalidations.publish('agent', 'a-2')).toBe(true);
    await atB;
    expect(seenB.filter((s) => s.startsWith('agent:'))).toEqual(['agent:a-1', 'agent:a-2']);
    // The publisher's own echo (Redis) is not delivered a second time.
    const marker = nextNotice(a, (t) => t === 'marker');
    await b.invalidations.publish('marker', 'x');
    await marker;
    expect(seenA.filter((s) => s.startsWith('agent:'))).toEqual(['agent:a-1', 'agent:a-2']);
  });

  it('stops delivering to an unsubscribed handler; a throwing handler does not starve the others', async () => {
    const [a, b] = await make();
    const got: string[] = [];
    const unsub = await b.invalidations.subscribe((_t, k) => got.push(k));
    await b.invalidations.subscribe(() => {
      throw new Error('bug in a handler');
    });
    const first = nextNotice(b, (_t, k) => k === 'k1');
    await a.invalidations.publish('user', 'k1');
    await first;
    await unsub();
    const second = nextNotice(b, (_t, k) => k === 'k2');
    await a.invalidations.publish('user', 'k2');
    await second;
    expect(got).toEqual(['k1']);
  });
}
