/**
 * Issue 11, "injected text is rate-limited per call": a token bucket on the injected clock (default
 * burst 5, 1 per second) in front of the LLM, for both `text_inject` frames and `/text`; a refusal
 * is a non-fatal `error` event with a stable code, and `injectText()` returns it for the reply.
 */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { INJECT_TEXT_MAX_CHARS, resolveCallLimits, DEFAULT_CALL_LIMITS } from '../../../media-engine/session/limits.js';
import { TokenBucket } from '../../../media-engine/session/token-bucket.js';
import { actorHarness } from './actor-harness.js';

describe('injected text rate limit', () => {
  it('a burst of 20 gets the default 5 through; the rest are refused RATE_LIMITED before any LLM request', async () => {
    const h = actorHarness({ max_turns: 0 });
    h.actor.start();
    for (let i = 0; i < 20; i++) h.actor.post({ kind: 'text_inject', text: `burst ${i}`, role: 'user' });
    await h.settle();
    expect(h.transport.of('transcription')).toHaveLength(DEFAULT_CALL_LIMITS.injectBurst);
    expect(h.llm.requestCount).toBeLessThanOrEqual(DEFAULT_CALL_LIMITS.injectBurst);
    const errors = h.transport.of('error');
    expect(errors).toHaveLength(15);
    expect(errors.every((e) => e.code === 'RATE_LIMITED' && e.fatal === false)).toBe(true);
    expect(h.actor.isClosed).toBe(false);
    expect(h.actor.injectionCounts).toMatchObject({ accepted: 5, rate_limited: 15 });
    // One warning per reason, not one per refused frame.
    expect(h.logLines.filter((l) => l.includes('injected text refused'))).toHaveLength(1);
  });

  it('refills one per second on the injected clock, and system notes spend the same budget', async () => {
    const h = actorHarness({ max_turns: 0 });
    h.actor.start();
    for (let i = 0; i < 5; i++) expect(h.actor.injectText(`note ${i}`, 'system').ok).toBe(true);
    const refused = h.actor.injectText('one more', 'user');
    expect(refused).toMatchObject({ ok: false, code: 'RATE_LIMITED', reason: 'rate_limited', retryAfterMs: 1000 });
    h.clock.advance(999);
    expect(h.actor.injectText('still too early', 'user')).toMatchObject({ ok: false, code: 'RATE_LIMITED', retryAfterMs: 1 });
    h.clock.advance(1);
    expect(h.actor.injectText('now', 'user')).toEqual({ ok: true });
    await h.settle();
    expect(h.transport.of('transcription').map((e) => e.text)).toEqual(['now']);
  });

  it('per-session overrides are clamped into range', () => {
    expect(resolveCallLimits({ inject_burst: 0, inject_refill_per_s: Number.NaN, history_token_budget: 1e12 })).toEqual({
      ...DEFAULT_CALL_LIMITS,
      injectBurst: 1,
      historyTokenBudget: 1_000_000,
    });
    expect(resolveCallLimits(undefined)).toEqual(DEFAULT_CALL_LIMITS);
  });

  it('the token bucket never holds more than its capacity', () => {
    const clock = new SimulatedClock();
    const b = new TokenBucket(clock, 2, 1);
    clock.advance(60_000);
    expect([b.take(), b.take(), b.take()]).toEqual([true, true, false]);
    expect(b.retryAfterMs()).toBe(1000);
  });
});

describe('injected text length', () => {
  it(`more than ${INJECT_TEXT_MAX_CHARS} characters, or only blanks, is refused INVALID_REQUEST without spending the budget`, async () => {
    const h = actorHarness({ max_turns: 0, call_limits: { inject_burst: 1 } });
    h.actor.start();
    expect(h.actor.injectText('x'.repeat(INJECT_TEXT_MAX_CHARS + 1), 'user')).toMatchObject({ ok: false, code: 'INVALID_REQUEST', reason: 'too_long' });
    h.actor.post({ kind: 'text_inject', text: '   ', role: 'user' });
    expect(h.transport.of('error').map((e) => e.code)).toEqual(['INVALID_REQUEST', 'INVALID_REQUEST']);
    // The single token is still there.
    expect(h.actor.injectText('x'.repeat(INJECT_TEXT_MAX_CHARS), 'user')).toEqual({ ok: true });
    await h.settle();
    expect(h.llm.requestCount).toBe(1);
  });
});
