/**
 * The registry's cache-invalidation part (issue 13): one contract, run against the in-process
 * registry and real Redis (own key prefix). A notice reaches every subscriber of every instance
 * sharing the registry, the publisher's own subscribers at once (before `publish` resolves) and
 * exactly once; unsubscribed handlers get nothing; a throwing handler does not starve the others.
 * Redis only: a publish while Redis is unreachable resolves false (still evicting locally), and a
 * subscriber whose connection comes back gets FLUSH_ALL (notices may have been lost meanwhile).
 */
import { afterAll, describe, expect, it } from 'vitest';
import { FLUSH_ALL, MemoryRegistry, RedisRegistry, type Registry } from '../../../shared/registry/index.js';
import { TEST_REDIS_URL, uniqueName } from '../../helpers/infra.js';
import { TcpProxy } from '../../helpers/tcp-proxy.js';

const closers: Array<() => Promise<void>> = [];
afterAll(async () => {
  for (const c of closers.reverse()) await c();
});

/** Resolves with the first notice the predicate accepts; rejects after `ms`. */
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
