/**
 * Credit running out mid-call (BILLING_ENABLED; docs/billing.md): once the time allowance the
 * engine got at connect is spent, the call ends at the next turn boundary: at once when nothing
 * is in progress, after the reply being played, or instead of answering a caller turn. The
 * boundary gets the `insufficient_balance` error event, the spoken notice, then `call_ended`.
 */
import { describe, expect, it } from 'vitest';
import { CREDIT_NOTICE_TEXT } from '../../../media-engine/session/credit.js';
import { actorHarness } from './actor-harness.js';

const REPLY = 'We open at noon and close at ten.';
const llm = { script: { rules: [{ when: 'hours', reply: REPLY }] } };

function expectCreditEnd(h: ReturnType<typeof actorHarness>): void {
  const types = h.transport.types();
  const err = types.indexOf('error');
  expect(h.transport.of('error')).toEqual([expect.objectContaining({ code: 'insufficient_balance' })]);
  // After the boundary: the notice is spoken (no model call), then the end.
  const after = types.slice(err);
  expect(after[1]).toBe('tts_audio_start');
  expect(after.at(-1)).toBe('call_ended');
  expect(after.filter((t) => !['error', 'tts_audio_start', 'tts_complete', 'call_ended'].includes(t))).toEqual([]);
  expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'insufficient_balance' });
  expect(h.transport.closed).toEqual({ code: 1000, reason: 'insufficient_balance' });
  expect(h.recorder.ended).toMatchObject({ status: 'completed', reason: 'insufficient_balance' });
}

describe('CallActor credit allowance', () => {
  it('spent while nothing is in progress: the notice at once, then the end', async () => {
    const h = actorHarness({}, { llm, allowanceMs: 1000 });
    const t0 = h.clock.now();
    h.actor.start();
    await h.runUntil(() => h.transport.of('error').length > 0, 2000);
    expect(h.clock.now() - t0).toBeGreaterThanOrEqual(1000);
    expect(h.clock.now() - t0).toBeLessThan(1100);
    expect(await h.runUntil(() => h.actor.isClosed, 20_000)).toBe(true);
    expectCreditEnd(h);
    expect(h.llm.requestCount).toBe(0);
    // The notice was spoken (paced audio), not skipped.
    expect(h.transport.audioFrames).toBeGreaterThan(CREDIT_NOTICE_TEXT.length);
  });

  it('spent during a reply: the reply plays to its end, then the notice', async () => {
    const h = actorHarness({}, { llm, allowanceMs: 2500 });
    const t0 = h.clock.now();
    h.actor.start();
    await h.speak('what are your hours');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 1, 5000);
    // The reply starts before the allowance ends and plays past it (~2.6 s of sim speech).
    expect(h.clock.now() - t0).toBeLessThan(2500);
    await h.runUntil(() => h.transport.of('error').length > 0, 10_000);
    // Nothing at 2.5 s, when the allowance ran out mid-reply: only at the reply's end (~4.4 s) ...
    expect(h.clock.now() - t0).toBeGreaterThan(3000);
    // ... and the notice in the same step as the reply's completion.
    expect(h.transport.of('turn_complete')).toHaveLength(1);
    expect(await h.runUntil(() => h.actor.isClosed, 30_000)).toBe(true);
    const types = h.transport.types();
    // The boundary is the end of the reply: its turn completed, uncut, before the notice.
    expect(types.indexOf('turn_complete')).toBeLessThan(types.indexOf('error'));
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, assistant_text: REPLY });
    expect(h.recorder.turns).toHaveLength(1);
    expect(h.recorder.turns[0]).toMatchObject({ interrupted: false, assistant_text: REPLY });
    expectCreditEnd(h);
    expect(h.llm.requestCount).toBe(1);
  });

  it('spent while the caller speaks: that turn is not answered (no LLM), the notice is', async () => {
    const h = actorHarness({}, { llm, allowanceMs: 300 });
    h.actor.start();
    await h.speak('what are your hours');
    await h.silence(200);
    expect(await h.runUntil(() => h.actor.isClosed, 20_000)).toBe(true);
    expectCreditEnd(h);
    expect(h.llm.requestCount).toBe(0);
    expect(h.transport.of('transcription')).toEqual([]);
  });

  it('no allowance: no limit', async () => {
    const h = actorHarness({}, { llm });
    h.actor.start();
    await h.speak('what are your hours');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1, 10_000);
    await h.runUntil(() => false, 5000);
    expect(h.actor.isClosed).toBe(false);
    expect(h.transport.of('error')).toEqual([]);
  });
});
