/**
 * The caller speaking over the agent with an ASR that transcribes per utterance (no interim text:
 * OpenAI, Groq, Whisper servers). Before, both cases below lost the caller's words: the barge-in
 * window waited for text that never comes, and speech already under way when the answer ended was
 * never a turn (its onset had passed), so the caller was nudged as silent and hung up on.
 * - Speech that outlasts the answer becomes the caller's turn when the answer ends.
 * - Continuous speech of VAD_BARGE_CONFIRM_MS over the answer confirms a barge-in by itself.
 */
import { describe, expect, it } from 'vitest';
import { AsyncQueue } from '../../../shared/providers/async-queue.js';
import type { AsrEvent, AsrProvider, AsrStream } from '../../../shared/providers/types.js';
import { VAD_BARGE_CONFIRM_MS } from '../../../media-engine/session/caller-turns.js';
import { actorHarness, type ActorHarness } from './actor-harness.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';
const SAID = 'i would like a table for two';

/** A transcription ASR: no interim text; on flush, `SAID` if voiced audio came since the last flush. */
function perUtteranceAsr(): AsrProvider & { flushes: number } {
  const asr = {
    label: 'whisper-fake',
    capabilities: { interim: false, acceptsMulaw: false, sampleRatesHz: [16000] },
    flushes: 0,
    stream(): AsrStream {
      const q = new AsyncQueue<AsrEvent>(64);
      let voiced = false;
      return {
        push(frame) {
          const f = frame as Int16Array;
          for (let i = 0; i < f.length; i += 3) if (Math.abs(f[i]!) > 1000) voiced = true;
        },
        flush() {
          asr.flushes++;
          if (voiced) q.push({ type: 'final', text: SAID, endOfTurn: true });
          voiced = false;
        },
        end: () => q.end(),
        close: () => q.end(),
        [Symbol.asyncIterator]: () => q,
      };
    },
  };
  return asr;
}

async function answerPlaying(h: ActorHarness): Promise<void> {
  h.actor.start();
  h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
}

/** How long the answer to QUESTION plays (the clock is simulated: every run is the same). */
async function answerMs(): Promise<number> {
  const h = actorHarness({}, { asr: perUtteranceAsr() });
  await answerPlaying(h);
  const started = h.clock.now();
  while (h.transport.of('turn_complete').length === 0) await h.silence(20);
  return h.clock.now() - started;
}

describe('CallActor: the caller over the agent with a per-utterance ASR', () => {
  it('speech that starts in the last 300 ms of the answer and goes on after it is answered, not nudged', async () => {
    const playMs = await answerMs();
    const h = actorHarness({ silence_timeout_ms: 3000 }, { asr: perUtteranceAsr() });
    await answerPlaying(h);
    await h.silence(playMs - 300);
    expect(h.actor.phase).toBe('speaking');
    await h.hum(1200); // over the end of the answer and beyond
    expect(h.transport.of('turn_complete')).toHaveLength(1);
    expect(h.actor.phase).toBe('user_speaking');
    await h.silence(700); // the endpoint: flush, the transcript, the reply
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.transport.of('transcription').map((e) => e.text)).toEqual([QUESTION, SAID]);
    expect(h.transport.of('idle_check')).toEqual([]);
    expect(h.transport.of('user_started_speaking')).toHaveLength(1);
    expect(h.recorder.turns.map((t) => t.interrupted)).toEqual([false, false]);
  });

  it(`${VAD_BARGE_CONFIRM_MS} ms of continuous speech over the answer confirms a barge-in without text`, async () => {
    const asr = perUtteranceAsr();
    const h = actorHarness({}, { asr });
    await answerPlaying(h);
    await h.silence(600);
    await h.hum(VAD_BARGE_CONFIRM_MS + 200);
    expect(h.transport.clears).toBe(1);
    expect(h.actor.phase).toBe('user_speaking');
    await h.silence(700);
    await h.runUntil(() => h.transport.of('turn_complete').length === 2);
    expect(h.recorder.turns.map((t) => t.interrupted)).toEqual([true, false]);
    expect(h.transport.of('transcription').map((e) => e.text)).toEqual([QUESTION, SAID]);
  });

  it('a short backchannel-length sound over the answer does not cut it', async () => {
    const h = actorHarness({}, { asr: perUtteranceAsr() });
    await answerPlaying(h);
    await h.silence(600);
    await h.hum(300);
    await h.silence(200);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(h.transport.clears).toBe(0);
    expect(h.recorder.turns[0]!.interrupted).toBe(false);
  });
});
