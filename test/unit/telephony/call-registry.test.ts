/**
 * The registry's live-call methods: one contract, run against the in-process registry and real
 * Redis (own key prefix): seats per pool, patches never resurrect an ended call, a delete is won
 * once, lists per owner and per pool, lookup by carrier sid, expiry.
 */
import { afterAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { MemoryRegistry, RedisRegistry, type Registry } from '../../../shared/registry/index.js';
import { liveCallContract } from '../../contracts/registry.contract.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';

const redis: RedisRegistry[] = [];
afterAll(async () => {
  for (const r of redis) await r.close();
});


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
  liveCallContract(make);
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
