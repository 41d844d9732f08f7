/**
 * Superseded runs: every runner message carries its run id, and anything from a run that is no
 * longer the current one (interrupted, finished) is dropped: no events, no audio, no history.
 */
import { describe, expect, it } from 'vitest';
import type { TurnMsg } from '../../../media-engine/session/messages.js';
import { actorHarness } from './actor-harness.js';

describe('CallActor superseded runs', () => {
  it('late messages of an interrupted run change nothing in the current turn', async () => {
    const h = actorHarness({}, { llm: { ttftMs: 500 } });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'first', role: 'user' }); // run 1
    await h.settle();
    h.actor.post({ kind: 'asr', event: { type: 'final', text: 'second', endOfTurn: true } }); // barge-in: run 2
    await h.settle();
    const before = h.transport.events.length;
    const framesBefore = h.transport.audioFrames;

    const stale: TurnMsg[] = [
      { kind: 'llm_started', step: 1, atMs: 0 },
      { kind: 'llm_delta', step: 1, text: 'stale words' },
      { kind: 'tts_piece_start', text: 'stale words', step: 1 },
      { kind: 'tts_audio', chunk: { samples: new Int16Array(3200), sampleRateHz: 16000 } },
      { kind: 'tts_piece_end' },
      { kind: 'run_done', appended: [{ role: 'assistant', content: 'stale words' }], assistantText: 'stale words' },
    ];
    for (const msg of stale) h.actor.post({ kind: 'turn', runId: 1, msg });
    h.actor.pace(h.clock.monotonicMs());
    expect(h.transport.events.length).toBe(before);
    expect(h.transport.audioFrames).toBe(framesBefore);
    expect(h.actor.phase).toBe('thinking');

    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('turn_complete').map((e) => [e.turn, e.assistant_text])).toEqual([
      [1, ''],
      [2, 'You said: first second.'],
    ]);
    const texts = h.transport.of('llm_chunk').map((e) => e.text).join('');
    expect(texts).not.toContain('stale');
    expect(h.requests.flat().some((m) => m.content?.includes('stale'))).toBe(false);
    expect(h.recorder.turns.map((t) => t.assistant_text)).toEqual(['', 'You said: first second.']);
  });

  it('a finished run cannot restart playout or end a later turn', async () => {
    const h = actorHarness();
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'one', role: 'user' }); // run 1
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    h.actor.post({ kind: 'text_inject', text: 'two', role: 'user' }); // run 2
    await h.settle();
    h.actor.post({ kind: 'turn', runId: 1, msg: { kind: 'run_done', appended: [], assistantText: 'old' } });
    h.actor.post({ kind: 'turn', runId: 1, msg: { kind: 'tts_audio', chunk: { samples: new Int16Array(320), sampleRateHz: 16000 } } });
    expect(h.transport.of('turn_complete')).toHaveLength(1);
    expect(h.transport.of('tts_audio_start').map((e) => e.turn)).toEqual([1, 2]);
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('turn_complete')[1]).toMatchObject({ turn: 2, assistant_text: 'You said: two.' });
  });
});

describe('CallActor: a reply superseded before any of its audio played', () => {
  it('records and reports an empty assistant text (nothing was heard), not the whole answer', async () => {
    const h = actorHarness({}, { simTts: { ttfbMs: 400 } });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'msg 0', role: 'user' });
    // The answer's sentence is handed to the TTS (its segment opened) but no audio has come.
    await h.runUntil(() => h.transport.of('llm_end').length === 1);
    expect(h.transport.of('tts_audio_start')).toEqual([]);
    h.actor.post({ kind: 'text_inject', text: 'msg 1', role: 'user' });
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('turn_complete').map((e) => [e.turn, e.assistant_text])).toEqual([
      [1, ''],
      [2, 'You said: msg 0 msg 1.'],
    ]);
    expect(h.recorder.turns[0]).toMatchObject({ interrupted: true, assistant_text: '' });
  });
});
