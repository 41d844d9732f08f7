/**
 * The registry's cache-invalidation part (issue 13): one contract (test/contracts/registry.contract.ts),
 * run against the in-process registry and real Redis (own key prefix). A notice reaches every subscriber of every instance
 * sharing the registry, the publisher's own subscribers at once (before `publish` resolves) and
 * exactly once; unsubscribed handlers get nothing; a throwing handler does not starve the others.
 * Redis only: a publish while Redis is unreachable resolves false (still evicting locally), and a
 * subscriber whose connection comes back gets FLUSH_ALL (notices may have been lost meanwhile).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FLUSH_ALL, MemoryRegistry, RedisRegistry, type Registry } from '../../../shared/registry/index.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';
import { invalidationContract, nextNotice } from '../../contracts/registry.contract.js';

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** Two instances sharing one registry (in-process: the same object; Redis: two connections, one prefix). */
const impls: Array<[string, () => Promise<[Registry, Registry]>]> = [
  [
    'memory',
    async () => {
      const r = new MemoryRegistry();
      closers.push(() => r.close());
      return [r, r];
    },
  ],
  [
    'redis',
    async () => {
      const prefix = uniqueName('vpt');
      const a = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
      const b = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
      closers.push(() => a.close(), () => b.close());
      return [a, b];
    },
  ],
];

describe.each(impls)('invalidations in the %s registry', (_name, make) => {
  invalidationContract(make);
});

describe('invalidations over an unreliable Redis', () => {
  it('publish resolves false (local subscribers still see it) while Redis is unreachable; a resubscribed instance gets FLUSH_ALL', async () => {
    const proxy = await TcpProxy.start('127.0.0.1', Number(new URL(TEST_REDIS_URL).port || 6379));
    closers.push(() => proxy.close());
    const prefix = uniqueName('vpt');
    const behind = await RedisRegistry.connect({ url: proxy.urlFor(TEST_REDIS_URL), prefix, commandTimeoutMs: 300 });
    const direct = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
    closers.push(() => behind.close(), () => direct.close());
    const local: string[] = [];
    await behind.invalidations.subscribe((t, k) => local.push(`${t}:${k}`));
    const remote: string[] = [];
    await direct.invalidations.subscribe((t, k) => remote.push(`${t}:${k}`));

    const flushed = nextNotice(behind, (t, k) => t === FLUSH_ALL && k === FLUSH_ALL, 15_000);
    proxy.reset();
    // Wait until the registry knows it is cut off (its operations fail at once), then publish.
    await expect(behind.windows.incrWindow('probe', 1000)).rejects.toThrow(/unavailable/);
    expect(await behind.invalidations.publish('key', 'h1')).toBe(false);
    expect(local).toEqual(['key:h1']);

    proxy.restore();
    await flushed;
    // The subscriber and the command connection reconnect independently: wait for the latter too.
    await expect.poll(() => behind.windows.incrWindow('probe', 1000).then(() => true, () => false), { timeout: 10_000, interval: 50 }).toBe(true);
    const after = nextNotice(direct, (_t, k) => k === 'h2');
    expect(await behind.invalidations.publish('key', 'h2')).toBe(true);
    await after;
    expect(remote).toEqual(['key:h2']);
  }, 30_000);
});
