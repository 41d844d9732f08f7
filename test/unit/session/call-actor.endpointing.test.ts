/**
 * Endpointing: when a caller turn ends. The sim ASR reads the sim-coded speech back; its final
 * carries end-of-turn. Without it, 500 ms of VAD silence ends a turn that has final text; with no
 * text at all the ASR is flushed and the turn is given up 1.5 s later (`phase_idle`, no LLM call).
 */
import { describe, expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

describe('CallActor endpointing', () => {
  it('spoken turn: onset, transcription, one LLM run, the answer played, the turn recorded', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.speak('book a table');
    await h.silence(200);
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);

    expect(h.transport.types()).toEqual([
      'pipeline_ready',
      'user_started_speaking',
      'transcription',
      'llm_start',
      'llm_end',
      'tts_audio_start',
      'tts_complete',
      'turn_complete',
    ]);
    expect(h.transport.of('transcription')[0]).toMatchObject({ text: 'book a table', turn: 1 });
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, user_text: 'book a table', assistant_text: 'You said: book a table.' });
    expect(h.llm.requestCount).toBe(1);
    expect(h.actor.phase).toBe('listening');
    expect(h.recorder.turns).toHaveLength(1);
    expect(h.recorder.turns[0]).toMatchObject({ turn: 1, user_text: 'book a table', assistant_text: 'You said: book a table.', interrupted: false });
    expect(h.recorder.turns[0]!.user_audio!.length).toBeGreaterThan(0);
  });
});

describe('CallActor endpointing on silence', () => {
  it('final text without end-of-turn: the turn ends after 500 ms of silence, not before', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(300);
    expect(h.actor.phase).toBe('user_speaking');
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'what time is it', endOfTurn: false } });
    await h.silence(440);
    expect(h.transport.of('transcription')).toEqual([]);
    expect(h.actor.phase).toBe('user_speaking');
    await h.silence(80);
    expect(h.transport.of('transcription')).toMatchObject([{ text: 'what time is it', turn: 1 }]);
    expect(h.actor.phase).not.toBe('user_speaking');
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.recorder.turns.map((t) => t.user_text)).toEqual(['what time is it']);
  });

  it("the ASR's confidence reaches the turn record: the finals' mean weighted by length; none given, none recorded", async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(300);
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'book a', confidence: 0.5, endOfTurn: false } });
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'table for two', confidence: 0.9, endOfTurn: true } });
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    // (0.5 x 6 + 0.9 x 13) / 19
    expect(h.recorder.turns[0]!.asr.confidence).toBe(0.774);
    await h.hum(300);
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'thanks', endOfTurn: true } });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.recorder.turns[1]!.asr).not.toHaveProperty('confidence');
  });

  it('the final that answers the finalize request at the silence endpoint ends the turn at once (not 1.5 s later)', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(300);
    await h.silence(600); // past the 500 ms endpoint: no text yet, so the ASR was asked to finalize
    expect(h.actor.phase).toBe('user_speaking');
    const askedAt = h.clock.monotonicMs();
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'book a table for two', endOfTurn: false } });
    await h.silence(20);
    expect(h.transport.of('transcription')).toMatchObject([{ text: 'book a table for two', turn: 1 }]);
    expect(h.clock.monotonicMs() - askedAt).toBeLessThan(100);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.llm.requestCount).toBe(1);
  });

  it('no text at all: the ASR gets 1.5 s to finalize, then the turn is dropped with phase_idle and no LLM call', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(300);
    await h.silence(1500);
    expect(h.transport.of('phase_idle')).toEqual([]);
    await h.silence(600);
    expect(h.transport.types()).toEqual(['pipeline_ready', 'user_started_speaking', 'phase_idle']);
    expect(h.actor.phase).toBe('listening');
    expect(h.actor.turn).toBe(0);
    expect(h.llm.requestCount).toBe(0);
    expect(h.recorder.turns).toEqual([]);
  });
});

describe('CallActor when the caller audio stops mid-turn', () => {
  it('a stalled stream ends the turn with what was heard (the missing audio counts as silence after 1 s)', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(300);
    expect(h.actor.phase).toBe('user_speaking');
    h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'I would like to book' } });
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'I would like to book a table', endOfTurn: false } });
    // No frames at all from here: only the pacer ticks.
    const stoppedAt = h.clock.monotonicMs();
    expect(await h.runUntil(() => h.transport.of('transcription').length === 1, 5000)).toBe(true);
    expect(h.transport.of('transcription')[0]).toMatchObject({ text: 'I would like to book a table', turn: 1 });
    // 1 s of missing audio, then the 500 ms silence endpoint.
    expect(h.clock.monotonicMs() - stoppedAt).toBeLessThan(1700);
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);
  });

  it('frames that keep coming are never replaced: a long utterance is not cut', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(3000);
    expect(h.actor.phase).toBe('user_speaking');
  });
});
