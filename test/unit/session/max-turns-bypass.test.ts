/**
 * Issue 11, finding "`max_turns` bypass": 100 `text_inject` frames in a burst on a call capped at
 * 50 gave 101 turns and 101 LLM requests. Injected (and spoken) text is now counted against the cap
 * before the LLM is called; at the cap the last answer plays and the call ends with `max_turns`.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

describe('`max_turns` bypass', () => {
  it('100 injections in a burst on a call capped at 50: at most 50 LLM requests, then call_ended max_turns', async () => {
    // Rate limit out of the way: this pins the cap alone (the rate limit has its own tests).
    const h = actorHarness({ max_turns: 50, call_limits: { inject_burst: 1000 } });
    h.actor.start();
    for (let i = 1; i <= 100; i++) h.actor.post({ kind: 'text_inject', text: `message ${i}`, role: 'user' });
    await h.settle();

    expect(h.llm.requestCount).toBeLessThanOrEqual(50);
    const turns = h.transport.of('transcription').map((e) => e.turn);
    expect(turns).toHaveLength(50);
    expect(Math.max(...turns)).toBe(50);
    const refusals = h.transport.of('error');
    expect(refusals).toHaveLength(50);
    expect(refusals.every((e) => e.code === 'CONFLICT' && e.fatal === false)).toBe(true);
    expect(h.actor.injectionCounts).toMatchObject({ accepted: 50, max_turns: 50 });

    // The 50th answer plays to the end, then the call ends the way a spoken 50th turn ends it.
    // Each earlier answer was interrupted before a word of it was heard, so its caller text joined
    // the next turn: the last answer replies to all 50 messages.
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);
    const last = h.transport.of('turn_complete').at(-1)!;
    const all = Array.from({ length: 50 }, (_, i) => `message ${i + 1}`).join(' ');
    expect(last).toMatchObject({ turn: 50, assistant_text: `You said: ${all}.` });
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'max_turns' });
    expect(h.llm.requestCount).toBeLessThanOrEqual(50);
  });

  it('speech that barges into the last answer ends the call instead of starting turn max_turns + 1', async () => {
    const h = actorHarness({ max_turns: 1 });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'tell me everything', role: 'user' });
    await h.runUntil(() => h.transport.of('tts_audio_start').length > 0);
    // The caller talks over the answer: a final transcript confirms the barge-in and ends the turn.
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'and one more question', endOfTurn: true } });
    await h.settle();
    expect(h.actor.isClosed).toBe(true);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'max_turns' });
    expect(h.transport.of('transcription').map((e) => e.turn)).toEqual([1]);
    expect(h.llm.requestCount).toBe(1);
  });

  it('barge-in disabled: text queued before the cap becomes the last turn, text after it is refused, then max_turns', async () => {
    const h = actorHarness({ max_turns: 2, interrupt_enabled: false });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'first', role: 'user' });
    await h.settle();
    // Turn 1 is playing and may not be interrupted: these wait for it (turn 2 will be "second third").
    h.actor.post({ kind: 'text_inject', text: 'second', role: 'user' });
    h.actor.post({ kind: 'text_inject', text: 'third', role: 'user' });
    await h.runUntil(() => h.transport.of('transcription').length === 2);
    // Turn 2 is the last one allowed: this cannot become a turn, and the answer still plays.
    h.actor.post({ kind: 'text_inject', text: 'fourth', role: 'user' });
    expect(h.transport.of('error')).toMatchObject([{ code: 'CONFLICT', fatal: false }]);
    expect(h.actor.isClosed).toBe(false);
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);
    expect(h.transport.of('turn_complete').map((e) => e.user_text)).toEqual(['first', 'second third']);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'max_turns' });
    expect(h.llm.requestCount).toBe(2);
  });

  it('injections wait in the bounded queue while barge-in is disabled, folded into one next turn', async () => {
    const h = actorHarness({ max_turns: 10, interrupt_enabled: false });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'first', role: 'user' });
    await h.settle();
    h.actor.post({ kind: 'text_inject', text: 'second', role: 'user' });
    h.actor.post({ kind: 'text_inject', text: 'third', role: 'user' });
    // Beyond INJECT_TEXT_MAX_CHARS pending: refused, not queued.
    h.actor.post({ kind: 'text_inject', text: 'x'.repeat(3995), role: 'user' });
    await h.settle();
    expect(h.llm.requestCount).toBe(1);
    expect(h.transport.of('error')).toMatchObject([{ code: 'RATE_LIMITED', fatal: false }]);
    expect(h.actor.injectionCounts).toMatchObject({ accepted: 3, pending_full: 1 });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('turn_complete').map((e) => e.user_text)).toEqual(['first', 'second third']);
    expect(h.llm.requestCount).toBe(2);
  });
});
