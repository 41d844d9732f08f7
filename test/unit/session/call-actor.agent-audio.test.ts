/**
 * The agent's side of a reply is on its turn record (`agent_audio`, at the transport rate): what
 * was sent to the caller, whole for an answer played to its end, cut where the caller interrupted.
 * The welcome's audio is on its agent message the same way. The record writer stores each as the
 * assistant message's audio (docs/conversations.md).
 */
import { expect, it } from 'vitest';
import { actorHarness } from './actor-harness.js';

const QUESTION = 'tell me about the opening hours of the restaurant on the weekend';

it('an answer played to its end: its whole audio, at the transport rate; the welcome has its own', async () => {
  const h = actorHarness({ welcome_message: 'hello there' });
  h.actor.start();
  await h.runUntil(() => h.recorder.agentMessages.length === 1);
  // The welcome has played whole (its run ends when its audio is out): what follows is the answer's.
  const before = h.transport.audioFrames;
  const welcome = h.recorder.agentMessages[0]!.agent_audio!;
  expect(welcome.sampleRateHz).toBe(16000);
  expect(welcome.samples.length).toBe(before * 320);
  expect(welcome.samples.some((s) => s !== 0)).toBe(true);
  h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await h.runUntil(() => h.recorder.turns.length === 1, 30_000);
  const audio = h.recorder.turns[0]!.agent_audio!;
  expect(audio.sampleRateHz).toBe(16000);
  // As long as what was sent: one 20 ms frame per frame the transport got for this turn.
  const sentFrames = h.transport.audioFrames - before;
  expect(audio.samples.length).toBe(sentFrames * 320);
  expect(audio.samples.some((s) => s !== 0)).toBe(true);
});

it('an interrupted answer: only what was sent before the cut', async () => {
  const full = actorHarness();
  full.actor.start();
  full.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await full.runUntil(() => full.recorder.turns.length === 1, 30_000);
  const whole = full.recorder.turns[0]!.agent_audio!.samples.length;

  const h = actorHarness();
  h.actor.start();
  h.actor.post({ kind: 'text_inject', text: QUESTION, role: 'user' });
  await h.runUntil(() => h.transport.of('tts_audio_start').length === 1);
  await h.silence(1000);
  h.actor.post({ kind: 'asr', event: { type: 'interim', text: 'hold on' } });
  await h.settle();
  const cut = h.recorder.turns[0]!;
  expect(cut.interrupted).toBe(true);
  expect(cut.agent_audio!.samples.length).toBeGreaterThan(0);
  expect(cut.agent_audio!.samples.length).toBeLessThan(whole);
  // About the second that played, plus the lead ahead of real time.
  expect(cut.agent_audio!.samples.length / 16000).toBeLessThan(1.5);
});
