/**
 * Interruption keeps only what the caller heard: audio sent minus the lead still ahead of real
 * time, mapped onto the spoken text. That share, and nothing more, goes into the LLM history and
 * the turn record (marked interrupted). When nothing was heard, the unanswered caller text is
 * folded into the next turn instead of leaving two user messages in a row.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';
const FULL_ANSWER = `You said: ${QUESTION}.`;

/** Plays the answer to QUESTION for `playMs`, then a confirming interim interrupts it. */
async function interruptAfter(playMs: number) {
  const h = actorHarness();
  h.actor.start();
  h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
  await h.silence(playMs);
  h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'hold on' } });
  await h.settle();
  return h;
}

describe('CallActor interruption', () => {
  it('only the heard part of the answer stays in the history and the record; the turn is marked interrupted', async () => {
    const h = await interruptAfter(2000);
    const heard = h.transport.of('turn_complete')[0]!.assistant_text;
    expect(heard.length).toBeGreaterThan(0);
    expect(heard.length).toBeLessThan(FULL_ANSWER.length);
    expect(FULL_ANSWER.startsWith(heard)).toBe(true);
    expect(h.recorder.turns).toMatchObject([{ turn: 1, user_text: QUESTION, assistant_text: heard, interrupted: true }]);
    expect(h.transport.clears).toBe(1);
    expect(h.actor.phase).toBe('user_speaking');

    // The caller finishes; the next request carries the heard part as the assistant's message.
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'hold on please', endOfTurn: true } });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.requests[1]!.slice(1)).toEqual([
      { role: 'user', content: QUESTION },
      { role: 'assistant', content: heard },
      { role: 'user', content: 'hold on please' },
    ]);
    expect(h.recorder.turns.map((t) => [t.turn, t.interrupted])).toEqual([
      [1, true],
      [2, false],
    ]);
  });

  it('the longer the answer played, the more of it was heard', async () => {
    const early = (await interruptAfter(800)).transport.of('turn_complete')[0]!.assistant_text;
    const late = (await interruptAfter(2400)).transport.of('turn_complete')[0]!.assistant_text;
    expect(late.length).toBeGreaterThan(early.length);
    expect(late.startsWith(early)).toBe(true);
  });

  it('nothing heard (cut while thinking): no assistant message, the caller text folds into the next turn', async () => {
    const h = actorHarness({}, { llm: { ttftMs: 1000 } });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'first question', role: 'user' });
    await h.settle();
    expect(h.actor.phase).toBe('thinking');
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'and another thing', endOfTurn: true } });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);

    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, assistant_text: '' });
    expect(h.recorder.turns[0]).toMatchObject({ turn: 1, interrupted: true, assistant_text: '' });
    expect(h.transport.of('transcription').map((e) => [e.turn, e.text])).toEqual([
      [1, 'first question'],
      [2, 'first question and another thing'],
    ]);
    expect(h.requests[1]!.slice(1)).toEqual([{ role: 'user', content: 'first question and another thing' }]);
    expect(h.transport.audioFrames).toBeGreaterThan(0);
  });
});
