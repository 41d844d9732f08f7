/**
 * withTtsRetry against a scripted in-memory provider, with a SimulatedClock: backoffs are exact
 * and no real time passes. `onRetry` advances the clock on the next microtask, i.e. right after
 * the decorator has armed its sleep timer.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../../shared/clock.js';
import { ProviderError } from '../../../../shared/providers/errors.js';
import { withTtsRetry } from '../../../../shared/providers/retry.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../../../../shared/providers/types.js';
import { settle } from './helpers.js';

type Step = { fail: unknown } | { chunks: number; thenFail?: unknown };

function scripted(steps: Step[]) {
  const calls: TtsRequest[] = [];
  const returned: boolean[] = [];
  const provider: TtsProvider = {
    label: 'scripted',
    capabilities: { streaming: true, sampleRatesHz: [16000] },
    async *synthesize(req) {
      const i = calls.push(req) - 1;
      const step = steps[Math.min(i, steps.length - 1)]!;
      returned[i] = false;
      try {
        if ('fail' in step) throw step.fail;
        for (let n = 0; n < step.chunks; n++) yield { samples: new Int16Array([n + 1]), sampleRateHz: 16000 } satisfies PcmChunk;
        if (step.thenFail) throw step.thenFail;
      } finally {
        returned[i] = true;
      }
    },
  };
  return { provider, calls, returned };
}

const err = (code: 'RATE_LIMITED' | 'UPSTREAM_UNAVAILABLE' | 'BAD_REQUEST', retryAfterMs?: number) =>
  new ProviderError({ provider: 'scripted', code, message: code, retryable: code !== 'BAD_REQUEST', retryAfterMs });

function setup(steps: Step[], extra: { maxRetryAfterMs?: number; random?: () => number } = {}) {
  const clock = new SimulatedClock();
  const s = scripted(steps);
  const retries: Array<[number, number]> = [];
  const exhausted: number[] = [];
  const p = withTtsRetry(s.provider, {
    clock,
    // The jitter draw pinned at its top: each wait is its ceiling (tests below pin other draws).
    random: () => 1,
    ...extra,
    onRetry: (a, ms) => {
      retries.push([a, ms]);
      queueMicrotask(() => clock.advance(ms));
    },
    onExhausted: (a) => exhausted.push(a),
  });
  const run = (signal = new AbortController().signal) => settle(p.synthesize({ text: 'x', preferredSampleRateHz: 16000, signal }));
  return { ...s, retries, exhausted, run, clock };
}

describe('withTtsRetry', () => {
  it('retries failures before the first chunk with exponential backoff (ceilings 200, 400)', async () => {
    const t = setup([{ fail: err('UPSTREAM_UNAVAILABLE') }, { fail: err('UPSTREAM_UNAVAILABLE') }, { chunks: 2 }]);
    const { items, error } = await t.run();
    expect(error).toBeUndefined();
    expect(items.map((c) => c.samples[0])).toEqual([1, 2]);
    expect(t.retries).toEqual([[1, 200], [2, 400]]);
    expect(t.exhausted).toEqual([]);
  });

  it('jitters each wait within its ceiling (full jitter: draw x ceiling)', async () => {
    const t = setup([{ fail: err('UPSTREAM_UNAVAILABLE') }, { fail: err('UPSTREAM_UNAVAILABLE') }, { chunks: 1 }], { random: () => 0.25 });
    await t.run();
    expect(t.retries).toEqual([[1, 50], [2, 100]]);
  });

  it('uses the vendor Retry-After instead of its own backoff', async () => {
    const t = setup([{ fail: err('RATE_LIMITED', 1500) }, { chunks: 1 }]);
    await t.run();
    expect(t.retries).toEqual([[1, 1500]]);
  });

  it('gives up at once (exhausted) when Retry-After exceeds maxRetryAfterMs', async () => {
    const t = setup([{ fail: err('RATE_LIMITED', 60_000) }, { chunks: 1 }], { maxRetryAfterMs: 5000 });
    const { error } = await t.run();
    expect(error.code).toBe('RATE_LIMITED');
    expect(t.calls).toHaveLength(1);
    expect(t.exhausted).toEqual([1]);
  });

  it('reports exhaustion after maxAttempts retryable failures', async () => {
    const t = setup([{ fail: err('UPSTREAM_UNAVAILABLE') }]);
    const { error } = await t.run();
    expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(t.calls).toHaveLength(3);
    expect(t.exhausted).toEqual([3]);
  });

  it('does not retry a non-retryable ProviderError', async () => {
    const t = setup([{ fail: err('BAD_REQUEST') }, { chunks: 1 }]);
    const { error } = await t.run();
    expect(error.code).toBe('BAD_REQUEST');
    expect(t.calls).toHaveLength(1);
    expect(t.retries).toEqual([]);
  });

  it('never retries after the first chunk (audio already played)', async () => {
    const t = setup([{ chunks: 2, thenFail: err('UPSTREAM_UNAVAILABLE') }, { chunks: 5 }]);
    const { items, error } = await t.run();
    expect(items).toHaveLength(2);
    expect(error.code).toBe('UPSTREAM_UNAVAILABLE');
    expect(t.calls).toHaveLength(1);
  });

  it('an abort during the backoff ends with ABORTED and no further attempt', async () => {
    const clock = new SimulatedClock();
    const s = scripted([{ fail: err('UPSTREAM_UNAVAILABLE') }, { chunks: 1 }]);
    const ac = new AbortController();
    const p = withTtsRetry(s.provider, { clock, onRetry: () => queueMicrotask(() => ac.abort()) });
    const { error } = await settle(p.synthesize({ text: 'x', preferredSampleRateHz: 16000, signal: ac.signal }));
    expect(error.code).toBe('ABORTED');
    expect(s.calls).toHaveLength(1);
    expect(clock.pendingTimers).toBe(0);
  });

  it('a consumer break after the first chunk returns the inner stream (vendor request cancelled)', async () => {
    const t = setup([{ chunks: 5 }]);
    const p = withTtsRetry(t.provider);
    for await (const c of p.synthesize({ text: 'x', preferredSampleRateHz: 16000, signal: new AbortController().signal })) {
      expect(c.samples[0]).toBe(1);
      break;
    }
    expect(t.returned).toEqual([true]);
  });

  it('a synthesis that failed before its first chunk stays over: next() again starts no new request', async () => {
    const t = setup([{ fail: err('BAD_REQUEST') }, { chunks: 1 }]);
    const it = withTtsRetry(t.provider).synthesize({ text: 'x', preferredSampleRateHz: 16000, signal: new AbortController().signal })[Symbol.asyncIterator]();
    await expect(it.next()).rejects.toMatchObject({ code: 'BAD_REQUEST' });
    expect(await it.next()).toEqual({ value: undefined, done: true });
    expect(t.calls).toHaveLength(1);
  });

  it('return() while the first chunk is pending cancels that attempt once it answers', async () => {
    const t = setup([{ chunks: 3 }]);
    const it = withTtsRetry(t.provider).synthesize({ text: 'x', preferredSampleRateHz: 16000, signal: new AbortController().signal })[Symbol.asyncIterator]();
    const first = it.next();
    await it.return!();
    expect((await first).value.samples[0]).toBe(1);
    await Promise.resolve();
    expect(t.returned).toEqual([true]);
    expect(await it.next()).toEqual({ value: undefined, done: true });
  });
});
