/**
 * Issue 23, found by the cluster rig (test/integration/ops.cluster.test.ts): only the replica that
 * placed a live call journaled its record. A rolling deploy replaces every control plane while
 * calls go on; when Redis then restarted empty, nobody wrote those calls back: each live call was
 * gone from the registry (its seat free, `GET`/`end`/transfer 404, a campaign's live count short).
 *
 * The engine node carrying a call's media adopts its record while it carries it: pinned here with
 * a placer that goes away, an adopter that replays, and one that released the call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { RedisRegistry, type StoredCall } from '../../../shared/registry/index.js';
import { until } from '../../helpers/campaigns.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';

const prefix = uniqueName('vpt');
const direct = createClient({ url: TEST_REDIS_URL });
let placer: RedisRegistry;
let engine: RedisRegistry;
let observer: RedisRegistry;

function call(id: string): StoredCall {
  const now = Date.now();
  return { callId: id, userId: 'u1', poolId: `pool-${id}`, providerCallSid: `CA-${id}`, data: { status: 'in_progress' }, createdAtMs: now, expiresAtMs: now + 60_000 };
}

async function wipe(): Promise<void> {
  for await (const keys of direct.scanIterator({ MATCH: `${prefix}:*` })) if (keys.length) await direct.del(keys);
}

beforeAll(async () => {
  await direct.connect();
  [placer, engine, observer] = await Promise.all([0, 1, 2].map(() => RedisRegistry.connect({ url: TEST_REDIS_URL, prefix })));
});

afterAll(async () => {
  await Promise.all([placer, engine, observer].map((r) => r?.close()));
  if (direct.isOpen) {
    await wipe();
    await direct.quit();
  }
});

describe('a live call whose placer is gone', () => {
  it('is written back by the engine node carrying it when Redis comes back empty, with later patches', async () => {
    await placer.calls.putCall(call('carried'), { seatLimit: 1 });
    await engine.calls.adoptCall('carried');
    await placer.close(); // the placing control plane was replaced
    await observer.calls.patchCall('carried', { amd_verdict: 'human' });
    await until(async () => {
      await wipe();
      await engine.replay();
      return (await observer.calls.getCall('carried'))?.data.amd_verdict === 'human';
    }, 5000, 'the carried call replayed with its patch');
    expect(await observer.calls.findCallBySid('CA-carried')).toMatchObject({ callId: 'carried' });
    // Its seat is held again.
    expect(await observer.calls.putCall({ ...call('other'), poolId: 'pool-carried' }, { seatLimit: 1 })).toBe(false);
  });

  it('is not written back once the engine released it, nor after it was ended elsewhere', async () => {
    await observer.calls.putCall(call('released'));
    await engine.calls.adoptCall('released');
    engine.calls.releaseCall('released');
    await observer.calls.putCall(call('ended'));
    await engine.calls.adoptCall('ended');
    await observer.close(); // the placer goes away: only the engine could bring them back
    const other = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
    try {
      await other.calls.deleteCall('ended');
      await until(async () => {
        await wipe();
        await engine.replay();
        return (await other.calls.getCall('ended')) === undefined;
      }, 5000, 'the ended call stays ended');
      expect(await other.calls.getCall('released')).toBeUndefined();
    } finally {
      await other.close();
    }
  });
});
