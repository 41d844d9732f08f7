import { describe, expect, it } from 'vitest';
import { boundedResolver, type ResolvedAddress } from '../../../shared/outbound/lookup.js';

/** A resolver whose lookups finish only when the test says so. */
function manualResolver() {
  const pending = new Map<string, { ok: (a: ResolvedAddress[]) => void; fail: (e: Error) => void }>();
  const started: string[] = [];
  const resolve = (hostname: string) =>
    new Promise<ResolvedAddress[]>((ok, fail) => {
      started.push(hostname);
      pending.set(hostname, { ok, fail });
    });
  return { resolve, started, pending };
}

const flush = () => new Promise((r) => setImmediate(r));

describe('boundedResolver', () => {
  it('runs at most maxConcurrent lookups at once, the rest in arrival order as slots free', async () => {
    const m = manualResolver();
    const r = boundedResolver(m.resolve, 2, 10);
    const results = ['a', 'b', 'c', 'd'].map((h) => r(h));
    await flush();
    expect(m.started).toEqual(['a', 'b']);
    m.pending.get('b')!.ok([{ address: '192.0.2.2', family: 4 }]);
    await expect(results[1]).resolves.toEqual([{ address: '192.0.2.2', family: 4 }]);
    await flush();
    expect(m.started).toEqual(['a', 'b', 'c']);
    // A failed lookup frees its slot too.
    m.pending.get('a')!.fail(new Error('ENOTFOUND'));
    await expect(results[0]).rejects.toThrow('ENOTFOUND');
    await flush();
    expect(m.started).toEqual(['a', 'b', 'c', 'd']);
    m.pending.get('c')!.ok([]);
    m.pending.get('d')!.ok([]);
    await Promise.all([results[2], results[3]]);
  });

  it('refuses at once beyond maxQueued waiting lookups (retryable EAI_AGAIN), without starting them', async () => {
    const m = manualResolver();
    const r = boundedResolver(m.resolve, 1, 2);
    const held = [r('a'), r('b'), r('c')];
    const refused = r('d');
    await expect(refused).rejects.toMatchObject({ code: 'EAI_AGAIN' });
    await flush();
    expect(m.started).toEqual(['a']);
    for (const h of ['a', 'b', 'c']) {
      await flush();
      m.pending.get(h)!.ok([]);
    }
    await Promise.all(held);
    expect(m.started).toEqual(['a', 'b', 'c']);
  });
});
