/**
 * Issue 23, found by the cluster rig (test/integration/ops.cluster.test.ts): a live call is
 * journaled by the replica that placed it, but its callbacks land on any replica behind the load
 * balancer. When another replica ended it (or patched it), the placer's journal still held its
 * old copy, and the placer's replay after a Redis restart brought the ended call back, `ringing`,
 * for its 6 h TTL: it held a seat, and a campaign at `max_concurrent_calls` stopped dialing.
 *
 * Pinned here with two registries on one Redis (one prefix): a call ended elsewhere stays ended
 * after the placer's replay (Redis lost everything, or only the placer's connection dropped and it
 * missed the notice), and a call patched elsewhere comes back with the patch, never older.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { RedisRegistry, type StoredCall } from '../../../shared/registry/index.js';
import { until } from '../../helpers/campaigns.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

const prefix = uniqueName('vpt');
const direct = createClient({ url: TEST_REDIS_URL });
let proxy: TcpProxy;
/** The replica that places the calls; behind a proxy, so its connection alone can drop. */
let placer: RedisRegistry;
/** The replica their callbacks land on. */
let other: RedisRegistry;

function call(id: string, status: string): StoredCall {
  const now = Date.now();
  return { callId: id, userId: 'u1', poolId: `pool-${id}`, providerCallSid: `CA-${id}`, data: { status }, createdAtMs: now, expiresAtMs: now + 60_000 };
}

/** Redis lost everything under this prefix (a restart without persistence). */
async function wipe(): Promise<void> {
  for await (const keys of direct.scanIterator({ MATCH: `${prefix}:*` })) if (keys.length) await direct.del(keys);
}

beforeAll(async () => {
  await direct.connect();
  const target = new URL(TEST_REDIS_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 6379));
  placer = await RedisRegistry.connect({ url: proxy.urlFor(TEST_REDIS_URL), prefix, commandTimeoutMs: 500 });
  other = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
});

afterAll(async () => {
  await placer?.close();
  await other?.close();
  await proxy?.close();
  if (direct.isOpen) {
    await wipe();
    await direct.quit();
  }
});

describe('replay of live calls changed by another replica', () => {
  it('a call ended elsewhere is not brought back by its placer after Redis comes back empty', async () => {
    expect(await placer.calls.putCall(call('ended', 'ringing'), { seatLimit: 1 })).toBe(true);
    expect((await other.calls.deleteCall('ended'))?.callId).toBe('ended');
    // Each round is a Redis restart and the placer's replay; the end notice reaches the placer
    // within a few milliseconds, after which no round brings the call back.
    await until(async () => {
      await wipe();
      await placer.replay();
      return (await other.calls.getCall('ended')) === undefined;
    }, 5000, 'the ended call stays ended');
    expect(await other.calls.findCallBySid('CA-ended')).toBeUndefined();
    // Its seat is free: the pool (limit 1) takes another call.
    expect(await other.calls.putCall({ ...call('next', 'ringing'), poolId: 'pool-ended' }, { seatLimit: 1 })).toBe(true);
  });

  it('a call patched elsewhere comes back with the patch', async () => {
    await placer.calls.putCall(call('patched', 'ringing'));
    await other.calls.patchCall('patched', { status: 'in_progress', amd_verdict: 'human' });
    await until(async () => {
      await wipe();
      await placer.replay();
      return (await other.calls.getCall('patched'))?.data.status === 'in_progress';
    }, 5000, 'the patch replayed');
    expect((await other.calls.getCall('patched'))!.data).toEqual({ status: 'in_progress', amd_verdict: 'human' });
  });

  it('a placer cut off while its call was ended and another patched writes neither back when it reconnects', async () => {
    await placer.calls.putCall(call('gone-while-away', 'ringing'));
    await placer.calls.putCall(call('patched-while-away', 'ringing'));
    proxy.reset();
    // The notices are published while the placer cannot hear them.
    await other.calls.deleteCall('gone-while-away');
    await other.calls.patchCall('patched-while-away', { status: 'in_progress' });
    proxy.restore();
    await until(async () => (await placer.calls.getCall('patched-while-away').catch(() => null)) !== null, 10_000, 'the placer reconnected');
    await placer.replay();
    expect(await other.calls.getCall('gone-while-away')).toBeUndefined();
    expect((await other.calls.getCall('patched-while-away'))?.data.status).toBe('in_progress');
    // And Redis losing everything afterwards brings back the live one, as patched, not the ended one.
    await wipe();
    await placer.replay();
    expect(await other.calls.getCall('gone-while-away')).toBeUndefined();
    expect((await other.calls.getCall('patched-while-away'))?.data.status).toBe('in_progress');
  });

  it('a call whose hash survived gets back the seat, user index and sid key it lost (a Redis Cluster master restarted empty)', async () => {
    expect(await placer.calls.putCall(call('partial', 'in_progress'), { seatLimit: 1 })).toBe(true);
    // On a Cluster these live in other slots than the call's hash: one master restarting empty
    // can take them while the hash stays. Here they are deleted directly, the hash kept.
    const lost = [`${prefix}:cp:pool-partial`, `${prefix}:csid:CA-partial`, `${prefix}:cu:u1`];
    expect(await direct.del(lost)).toBe(3);
    expect(await other.calls.findCallBySid('CA-partial')).toBeUndefined();
    await placer.replay();
    expect((await other.calls.findCallBySid('CA-partial'))?.callId).toBe('partial');
    // The seat is held again: the pool (limit 1) refuses a second call.
    expect(await other.calls.putCall({ ...call('second', 'ringing'), poolId: 'pool-partial' }, { seatLimit: 1 })).toBe(false);
    expect((await other.calls.listCalls({ userId: 'u1' })).map((c) => c.callId)).toContain('partial');
  });
});
