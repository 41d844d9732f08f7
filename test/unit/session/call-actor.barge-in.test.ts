/**
 * Barge-in: VAD onset while the agent answers emits `user_started_speaking` and opens a 2 s
 * window; real speech (not a backchannel) in an interim or final confirms it (run cancelled,
 * queued audio dropped, `clear`); no confirmation in the window gives `phase_idle` and the answer
 * goes on.
 */
import { describe, expect, it } from 'vitest';
import { actorHarness, type ActorHarness } from './actor-harness.js';
import { VAD_ONLY_BARGE_CONFIRM_MS } from '../../../media-engine/session/caller-turns.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';

/** Injects a question and lets its answer play for `playMs`. */
async function answerPlaying(h: ActorHarness, playMs: number): Promise<void> {
  h.actor.start();
  h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
  await h.silence(playMs);
  expect(h.actor.phase).toBe('speaking');
}

describe('CallActor barge-in', () => {
  it('caller speech confirms: the answer is cut, the caller gets the next turn', async () => {
    const h = actorHarness();
    await answerPlaying(h, 1000);
    const before = h.transport.events.length;
    await h.speak('wait a second');
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);

    const after = h.transport.events.slice(before).map((e) => e.type).filter((t) => t !== 'llm_chunk' && t !== 'interim_transcription');
    // One onset event (VAD), then the interrupted turn 1, then turn 2 from the caller's words.
    expect(after).toEqual(['user_started_speaking', 'turn_complete', 'transcription', 'llm_start', 'llm_end', 'tts_audio_start', 'tts_complete', 'turn_complete']);
    // The transcript that confirms it reaches the client before the interrupted turn_complete (spec
    // clients cut playback on interim_transcription; it came after).
    const order = h.transport.events.slice(before).map((e) => e.type).filter((t) => t === 'interim_transcription' || t === 'turn_complete');
    expect(order[0]).toBe('interim_transcription');
    expect(h.transport.clears).toBe(1);
    expect(h.transport.of('transcription').map((e) => [e.turn, e.text])).toEqual([
      [1, QUESTION],
      [2, 'wait a second'],
    ]);
    expect(h.recorder.turns.map((t) => t.interrupted)).toEqual([true, false]);
    expect(h.llm.requestCount).toBe(2);
  });

  it('a backchannel never confirms: "okay" while the agent speaks leaves the answer playing', async () => {
    const h = actorHarness();
    await answerPlaying(h, 600);
    await h.speak('okay');
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.clears).toBe(0);
    expect(h.transport.of('turn_complete')[0]).toMatchObject({ turn: 1, assistant_text: `You said: ${QUESTION}.` });
    expect(h.recorder.turns[0]!.interrupted).toBe(false);
    expect(h.llm.requestCount).toBe(1);
  });

  it('false barge-in: VAD onset without a confirming transcript gives phase_idle after 2 s, the answer goes on', async () => {
    const h = actorHarness();
    await answerPlaying(h, 600);
    // Hum frame by frame to note when the onset was signalled, then a little more.
    while (h.transport.of('user_started_speaking').length === 0) await h.hum(20);
    const onsetAt = h.clock.now();
    await h.hum(100);
    await h.silence(1860);
    expect(h.transport.of('phase_idle')).toEqual([]);
    await h.silence(40);
    expect(h.transport.of('phase_idle')).toHaveLength(1);
    expect(h.clock.now() - onsetAt).toBe(2000);
    expect(h.actor.phase).toBe('speaking');
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.clears).toBe(0);
    expect(h.recorder.turns).toMatchObject([{ turn: 1, interrupted: false, assistant_text: `You said: ${QUESTION}.` }]);
    expect(h.llm.requestCount).toBe(1);
  });

  it('barge-in disabled: speech over the answer neither signals nor cuts it', async () => {
    const h = actorHarness({ interrupt_enabled: false });
    await answerPlaying(h, 600);
    await h.hum(200);
    h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'stop talking' } });
    await h.settle();
    expect(h.transport.of('user_started_speaking')).toEqual([]);
    expect(h.transport.clears).toBe(0);
    expect(h.actor.phase).toBe('speaking');
  });
});

describe('CallActor barge-in by voice alone (a streaming ASR that returns no words)', () => {
  it(`${VAD_ONLY_BARGE_CONFIRM_MS} ms of continuous speech the ASR cannot read confirms it`, async () => {
    const h = actorHarness();
    await answerPlaying(h, 600);
    await h.hum(VAD_ONLY_BARGE_CONFIRM_MS - 200);
    expect(h.transport.clears).toBe(0);
    expect(h.transport.of('interim_transcription')).toHaveLength(0);
    await h.hum(400);
    expect(h.transport.clears).toBe(1);
    expect(h.actor.phase).toBe('user_speaking');
    // A browser client cuts its playback on interim_transcription (spec): it gets one, without words,
    // before the interrupted reply's turn_complete.
    expect(h.transport.of('interim_transcription')).toEqual([expect.objectContaining({ type: 'interim_transcription', text: '' })]);
    const types = h.transport.events.map((e) => e.type);
    expect(types.indexOf('interim_transcription')).toBeLessThan(types.lastIndexOf('turn_complete'));
  });

  it('speech the ASR heard as a backchannel does not, however long it goes on', async () => {
    const h = actorHarness();
    await answerPlaying(h, 600);
    await h.speak('okay');
    await h.hum(VAD_ONLY_BARGE_CONFIRM_MS);
    expect(h.transport.clears).toBe(0);
    expect(h.actor.phase).toBe('speaking');
  });
});
