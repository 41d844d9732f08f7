/**
 * Issue 22 correctness fixes: the event order at the end of a call cut mid-answer, the speech
 * duration of injected text, and the welcome / idle prompts in the durable record.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

describe('CallActor record fixes', () => {
  it('a turn cut by the end of the call completes before call_ended', async () => {
    const h = actorHarness();
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'tell me a long story about the sea', role: 'user' });
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
    await h.silence(400);
    h.actor.post({ kind: 'end', reason: 'hangup' });
    await h.settle();
    const types = h.transport.types();
    expect(types.filter((t) => t === 'turn_complete' || t === 'call_ended')).toEqual(['turn_complete', 'call_ended']);
    expect(types.at(-1)).toBe('call_ended');
    expect(h.recorder.turns).toMatchObject([{ turn: 1, interrupted: true }]);
  });

  it("injected text has no speech duration (not the previous utterance's)", async () => {
    const h = actorHarness();
    h.actor.start();
    await h.speak('hello there');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.of('transcription')[0]!.speech_duration_ms).toBeGreaterThan(0);
    h.actor.post({ kind: 'text_inject', text: 'typed question', role: 'user' });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('transcription')[1]).toMatchObject({ text: 'typed question', speech_duration_ms: 0 });
  });

  it('the welcome, the idle nudge and the goodbye are stored as agent messages', async () => {
    const h = actorHarness({ welcome_message: 'hello caller', silence_timeout_ms: 3000, idle_max_attempts: 1 });
    h.actor.start();
    expect(await h.runUntil(() => h.actor.isClosed, 60_000)).toBe(true);
    expect(h.recorder.turns).toEqual([]); // still no caller turns
    const nudge = h.transport.of('idle_check')[0]!.text;
    const bye = h.transport.of('idle_disconnect')[0]!.text;
    expect(h.recorder.agentMessages.map((m) => [m.kind, m.turn, m.text, m.interrupted])).toEqual([
      ['welcome', 0, 'hello caller', false],
      ['nudge', 0, nudge, false],
      ['goodbye', 0, bye, false],
    ]);
    expect(h.recorder.agentMessages.every((m) => m.tts.provider === 'sim')).toBe(true);
  });

  it('a welcome cut by the caller is stored as far as it was heard', async () => {
    const h = actorHarness({ welcome_message: 'hello caller, welcome to the very long introduction of our service' });
    h.actor.start();
    await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
    await h.silence(1000);
    h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'hold on' } });
    await h.settle();
    const [welcome] = h.recorder.agentMessages;
    expect(welcome).toMatchObject({ kind: 'welcome', interrupted: true });
    expect(welcome!.text.length).toBeGreaterThan(0);
    expect('hello caller, welcome to the very long introduction of our service'.startsWith(welcome!.text)).toBe(true);
  });

  it("the caller hangs up mid-sentence, before the ASR's final: their words are the last turn of the record, unanswered", async () => {
    const h = actorHarness();
    h.actor.start();
    await h.settle();
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'what are your', endOfTurn: false } });
    h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'opening hours' } });
    await h.settle();
    h.actor.post({ kind: 'end', reason: 'hangup' });
    await h.settle();
    expect(h.recorder.turns.map((t) => [t.turn, t.user_text, t.assistant_text, t.unanswered])).toEqual([[1, 'what are your opening hours', '', true]]);
    const types = h.transport.types();
    expect(types.slice(-3)).toEqual(['transcription', 'turn_complete', 'call_ended']);
    expect(h.recorder.ended?.total_turns).toBe(1);
  });

  it('nothing heard since the last turn: no extra turn at the end', async () => {
    const h = actorHarness();
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'typed question', role: 'user' });
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    h.actor.post({ kind: 'end', reason: 'hangup' });
    await h.settle();
    expect(h.recorder.turns.map((t) => t.user_text)).toEqual(['typed question']);
  });
});
