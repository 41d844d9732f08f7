/**
 * Idle nudges: after `silence_timeout_ms` of caller silence an `idle_check` nudge is spoken, up to
 * `idle_max_attempts`; then `idle_disconnect`, a goodbye, and `call_ended` `idle_timeout`. Caller
 * speech resets the count.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

describe('CallActor idle nudges', () => {
  it('two unanswered nudges, then idle_disconnect, the goodbye, call_ended idle_timeout', async () => {
    const h = actorHarness({ silence_timeout_ms: 3000, idle_max_attempts: 2 });
    h.actor.start();
    expect(await h.runUntil(() => h.actor.isClosed, 60_000)).toBe(true);

    const lifecycle = h.transport.types().filter((t) => ['idle_check', 'idle_disconnect', 'call_ended'].includes(t));
    expect(lifecycle).toEqual(['idle_check', 'idle_check', 'idle_disconnect', 'call_ended']);
    expect(h.transport.of('idle_check').map((e) => [e.attempt, e.max_attempts])).toEqual([
      [1, 2],
      [2, 2],
    ]);
    expect(h.transport.of('idle_disconnect')[0]).toMatchObject({ reason: 'no_response', total_attempts: 2 });
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'idle_timeout' });
    expect(h.transport.closed).toEqual({ code: 1000, reason: 'idle_timeout' });
    // Nudges and the goodbye are spoken text, not caller turns: no LLM call, no turn records.
    expect(h.llm.requestCount).toBe(0);
    expect(h.recorder.turns).toEqual([]);
    expect(h.recorder.ended).toMatchObject({ status: 'completed', reason: 'idle_timeout', total_turns: 0 });
  });

  it('the first nudge comes silence_timeout_ms after the welcome has played, not before', async () => {
    const h = actorHarness({ silence_timeout_ms: 3000, welcome_message: 'hello' });
    h.actor.start();
    await h.runUntil(() => h.actor.phase === 'listening');
    const welcomeDoneAt = h.clock.now();
    await h.runUntil(() => h.transport.of('idle_check').length === 1, 10_000);
    expect(h.clock.now() - welcomeDoneAt).toBeGreaterThanOrEqual(2980);
    expect(h.clock.now() - welcomeDoneAt).toBeLessThanOrEqual(3020);
  });

  it('caller speech after a nudge resets the count: the call goes on', async () => {
    const h = actorHarness({ silence_timeout_ms: 3000, idle_max_attempts: 1 });
    h.actor.start();
    await h.runUntil(() => h.transport.of('idle_check').length === 1);
    await h.runUntil(() => h.actor.phase === 'listening');
    await h.speak('i am here');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    // Another silence gets a first nudge again (attempt 1), not the goodbye.
    await h.runUntil(() => h.transport.of('idle_check').length === 2);
    expect(h.transport.of('idle_check').map((e) => e.attempt)).toEqual([1, 1]);
    expect(h.transport.of('idle_disconnect')).toEqual([]);
    expect(h.actor.isClosed).toBe(false);
  });
});

describe('CallActor: the last words on a carrier call', () => {
  /** A carrier call whose idle goodbye has played out: its mark is the last one sent. */
  async function goodbyeSent() {
    const h = actorHarness({ silence_timeout_ms: 3000, idle_max_attempts: 1 }, { transport: 'twilio', tuning: { markGraceMs: 3000 } });
    h.actor.start();
    await h.runUntil(() => h.transport.of('idle_disconnect').length === 1);
    const marksBefore = h.transport.marks.length;
    await h.runUntil(() => h.transport.marks.length === marksBefore + 1);
    return h;
  }

  it('the idle goodbye ends the call when its mark says it was heard, not when its audio left', async () => {
    const h = await goodbyeSent();
    // The carrier still plays its buffer.
    await h.silence(500);
    expect(h.actor.isClosed).toBe(false);
    h.actor.post({ kind: 'mark', name: h.transport.marks.at(-1)! });
    expect(h.actor.isClosed).toBe(true);
    expect(h.transport.closed?.reason).toBe('idle_timeout');
  });

  it('without a mark echo the call ends after the grace', async () => {
    const h = await goodbyeSent();
    const markedAt = h.clock.now();
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);
    expect(h.clock.now() - markedAt).toBe(3100); // grace + the transport's lead
    expect(h.transport.closed?.reason).toBe('idle_timeout');
  });
});
