/**
 * The registry's live-call methods: one contract, run against the in-process registry and real
 * Redis (own key prefix): seats per pool, patches never resurrect an ended call, a delete is won
 * once, lists per owner and per pool, lookup by carrier sid, expiry.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { MemoryRegistry, RedisRegistry, type Registry, type StoredCall } from '../../../shared/registry/index.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';

const redis: RedisRegistry[] = [];
afterAll(async () => {
  for (const r of redis) await r.close();
});

function call(id: string, over: Partial<StoredCall> = {}): StoredCall {
  const now = Date.now();
  return { callId: id, userId: 'u1', poolId: 'ws1', data: { status: 'initiated', n: 1 }, createdAtMs: now, expiresAtMs: now + 60_000, ...over };
}

const impls: Array<[string, () => Promise<Registry>]> = [
  ['memory', async () => new MemoryRegistry()],
  [
    'redis',
    async () => {
      const r = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix: uniqueName('vpt') });
      redis.push(r);
      return r;
    },
  ],
];

describe.each(impls)('live calls in the %s registry', (_name, make) => {
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
});

describe('live call expiry (memory registry, simulated clock)', () => {
  it('an expired call is gone from lookups, lists and seats', async () => {
    const clock = new SimulatedClock();
    const reg = new MemoryRegistry(clock);
    const now = clock.now();
    await reg.calls.putCall({ callId: 'e1', userId: 'u', poolId: 'p', providerCallSid: 'CAe', data: {}, createdAtMs: now, expiresAtMs: now + 1000 }, { seatLimit: 1 });
    expect(await reg.calls.putCall({ callId: 'e2', userId: 'u', poolId: 'p', data: {}, createdAtMs: now, expiresAtMs: now + 1000 }, { seatLimit: 1 })).toBe(false);
    clock.advance(1001);
    expect(await reg.calls.getCall('e1')).toBeUndefined();
    expect(await reg.calls.findCallBySid('CAe')).toBeUndefined();
    expect(await reg.calls.listCalls({ userId: 'u' })).toEqual([]);
    expect(await reg.calls.putCall({ callId: 'e2', userId: 'u', poolId: 'p', data: {}, createdAtMs: clock.now(), expiresAtMs: clock.now() + 1000 }, { seatLimit: 1 })).toBe(true);
  });
});
