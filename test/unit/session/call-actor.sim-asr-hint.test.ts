/**
 * The `sim` ASR reads only the sim audio code: when the VAD hears an utterance it could not read,
 * the caller (console) gets a non-fatal `error` event saying so and the engine logs one line per
 * call, instead of an agent that silently never answers.
 */
import { describe, expect, it } from 'vitest';
import { SIM_ASR_HINT, SPEECH_NOT_UNDERSTOOD } from '../../../media-engine/session/caller-turns.js';
import { actorHarness } from './actor-harness.js';

const hints = (h: ReturnType<typeof actorHarness>) => h.transport.of('error').filter((e) => e.code === SPEECH_NOT_UNDERSTOOD);
const hintLines = (h: ReturnType<typeof actorHarness>) => h.logLines.filter((l) => l.includes(SIM_ASR_HINT));

describe('sim ASR: speech it cannot decode is reported', () => {
  it('an undecodable utterance gives an error event each time and one log line per call', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(1200);
    await h.silence(2500);
    expect(hints(h)).toEqual([{ type: 'error', code: SPEECH_NOT_UNDERSTOOD, message: SIM_ASR_HINT, fatal: false }]);
    expect(hintLines(h)).toHaveLength(1);
    expect(h.actor.phase).toBe('listening');
    await h.hum(1200);
    await h.silence(2500);
    expect(hints(h)).toHaveLength(2);
    expect(hintLines(h)).toHaveLength(1);
    expect(h.actor.isClosed).toBe(false);
  });

  it('sim-coded speech and short blips give no such event', async () => {
    const h = actorHarness();
    h.actor.start();
    await h.hum(160);
    await h.silence(2500);
    await h.speak('hello there');
    await h.silence(300);
    await h.runUntil(() => h.transport.of('turn_complete').length === 1);
    expect(hints(h)).toEqual([]);
    expect(hintLines(h)).toEqual([]);
  });
});
