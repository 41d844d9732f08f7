/**
 * Answering-machine glue in the actor (the policy itself: amd.ts, its own tests). leave_voicemail
 * holds the greeting, and ignores caller audio, until the verdict; hangup_on_machine and
 * talk_anyway greet at once. The first decision is final.
 */
import { describe, expect, it } from 'vitest';
import type { AmdSettings } from '../../../shared/voice/amd.js';
import { actorHarness } from './actor-harness.js';

const WELCOME = 'hello from the clinic';
const VOICEMAIL = 'please call us back';

function amd(policy: AmdSettings['policy'], extra: Partial<AmdSettings> = {}): AmdSettings {
  return { policy, voicemailMessage: VOICEMAIL, unknownTreatedAs: 'human', verdictTimeoutMs: 4000, ...extra };
}

describe('CallActor AMD: leave_voicemail', () => {
  it('holds the greeting and ignores caller audio until the verdict; human: the welcome plays', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('leave_voicemail') });
    h.actor.start();
    await h.speak('hi you have reached the voicemail of');
    await h.silence(500);
    expect(h.transport.types()).toEqual(['pipeline_ready']);
    expect(h.actor.amdVerdict).toBeUndefined();

    h.actor.post({ kind: 'amd_verdict', verdict: 'human' });
    await h.runUntil(() => h.actor.phase === 'listening' && h.transport.audioFrames > 0);
    expect(h.actor.amdVerdict).toBe('human');
    expect(h.transport.types()).toEqual(['pipeline_ready', 'tts_audio_start', 'tts_complete']);
    expect(h.actor.isClosed).toBe(false);
    expect(h.llm.requestCount).toBe(0);
  });

  it('machine: the voicemail message plays, then call_ended voicemail_left (browser: at once)', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('leave_voicemail') });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);
    expect(h.transport.types()).toEqual(['pipeline_ready', 'tts_audio_start', 'tts_complete', 'call_ended']);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'voicemail_left' });
    expect(h.recorder.ended).toMatchObject({ reason: 'voicemail_left' });
  });

  it('machine on a carrier call: hangs up when the mark says the message was heard', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('leave_voicemail'), transport: 'twilio' });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    await h.runUntil(() => h.transport.marks.length === 1);
    await h.silence(1000);
    expect(h.actor.isClosed).toBe(false);
    // A text arriving now is refused: the call is ending.
    h.actor.post({ kind: 'text_inject', text: 'hello?', role: 'user' });
    expect(h.transport.of('error')).toMatchObject([{ code: 'CONFLICT', fatal: false }]);
    h.actor.post({ kind: 'mark', name: h.transport.marks[0]! });
    expect(h.actor.isClosed).toBe(true);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'voicemail_left' });
  });

  it('machine on a carrier call without a mark echo: hangs up after the grace period', async () => {
    const h = actorHarness({}, { amd: amd('leave_voicemail'), transport: 'twilio', tuning: { markGraceMs: 3000 } });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    await h.runUntil(() => h.transport.marks.length === 1);
    const markedAt = h.clock.now();
    expect(await h.runUntil(() => h.actor.isClosed)).toBe(true);
    expect(h.clock.now() - markedAt).toBe(3100); // grace + the transport's lead
    expect(h.transport.closed?.reason).toBe('voicemail_left');
  });

  it('no voicemail message: a machine is hung up on without speaking', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('leave_voicemail', { voicemailMessage: '' }) });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    expect(h.actor.isClosed).toBe(true);
    expect(h.transport.types()).toEqual(['pipeline_ready', 'call_ended']);
    expect(h.transport.events.at(-1)).toMatchObject({ reason: 'answering_machine' });
  });

  it('no verdict in time counts as unknown (treated as human): the welcome plays; a late verdict is ignored', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('leave_voicemail') });
    h.actor.start();
    await h.silence(3980);
    expect(h.transport.types()).toEqual(['pipeline_ready']);
    await h.silence(20);
    expect(h.actor.amdVerdict).toBe('unknown');
    expect(h.transport.types().slice(0, 2)).toEqual(['pipeline_ready', 'tts_audio_start']);
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    await h.runUntil(() => h.actor.phase === 'listening');
    expect(h.actor.amdVerdict).toBe('unknown');
    expect(h.actor.isClosed).toBe(false);
  });
});

describe('CallActor AMD: the other policies greet at once', () => {
  it('hangup_on_machine: machine ends the call during the welcome', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('hangup_on_machine') });
    h.actor.start();
    await h.settle();
    expect(h.transport.types().slice(0, 2)).toEqual(['pipeline_ready', 'tts_audio_start']);
    expect(h.actor.phase).toBe('speaking');
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    expect(h.actor.isClosed).toBe(true);
    expect(h.transport.events.at(-1)).toMatchObject({ type: 'call_ended', reason: 'answering_machine' });
  });

  it('hangup_on_machine: human changes nothing', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('hangup_on_machine') });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'human' });
    await h.runUntil(() => h.actor.phase === 'listening');
    expect(h.actor.amdVerdict).toBe('human');
    expect(h.actor.isClosed).toBe(false);
  });

  it('talk_anyway: machine is only recorded, the call goes on', async () => {
    const h = actorHarness({ welcome_message: WELCOME }, { amd: amd('talk_anyway') });
    h.actor.start();
    h.actor.post({ kind: 'amd_verdict', verdict: 'machine' });
    await h.runUntil(() => h.actor.phase === 'listening');
    expect(h.actor.amdVerdict).toBe('machine');
    expect(h.actor.isClosed).toBe(false);
    expect(h.transport.types()).toEqual(['pipeline_ready', 'tts_audio_start', 'tts_complete']);
  });
});
