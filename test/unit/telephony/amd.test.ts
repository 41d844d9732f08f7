/** Answering-machine policy: settings from agent metadata, verdict mapping, and the step table. */
import { describe, expect, it } from 'vitest';
import { amdStart, amdStep } from '../../../media-engine/session/amd.js';
import { amdSettings, clampTimeoutS, verdictFromAnsweredBy, type AmdSettings, type AmdVerdict } from '../../../shared/voice/amd.js';

describe('amd settings from agent metadata', () => {
  it.each([
    [{}, undefined],
    [{ amd_enabled: false, amd_policy: 'leave_voicemail' }, undefined],
    [{ amd_enabled: true, amd_policy: 'disabled' }, undefined],
    [{ amd_enabled: true, amd_policy: 'shout_at_machine' }, undefined],
    [{ amd_enabled: true }, { policy: 'hangup_on_machine', voicemailMessage: '', unknownTreatedAs: 'human', verdictTimeoutMs: 8000 }],
    [{ amd_enabled: 'true', amd_policy: 'talk_anyway', amd_unknown_treated_as: 'machine', amd_verdict_timeout_s: '12' }, { policy: 'talk_anyway', voicemailMessage: '', unknownTreatedAs: 'machine', verdictTimeoutMs: 12_000 }],
    [{ amd_enabled: true, amd_policy: 'leave_voicemail', amd_voicemail_message: ' Call us back. ', amd_unknown_treated_as: 'robot' }, { policy: 'leave_voicemail', voicemailMessage: 'Call us back.', unknownTreatedAs: 'human', verdictTimeoutMs: 8000 }],
  ])('%j -> %j', (meta, expected) => {
    expect(amdSettings(meta)).toEqual(expected);
  });

  it.each([
    [undefined, 8],
    ['abc', 8],
    [0, 2],
    [1.5, 2],
    [5, 5],
    [29.5, 29.5],
    [600, 30],
    ['7', 7],
  ])('timeout %j s -> %j s', (raw, s) => {
    expect(clampTimeoutS(raw)).toBe(s);
  });

  it.each([
    ['human', 'human'],
    ['machine_start', 'machine'],
    ['machine_end_beep', 'machine'],
    ['machine_end_silence', 'machine'],
    ['machine_end_other', 'machine'],
    ['fax', 'machine'],
    ['unknown', 'unknown'],
    ['', 'unknown'],
  ])('AnsweredBy %s -> %s', (answeredBy, verdict) => {
    expect(verdictFromAnsweredBy(answeredBy)).toBe(verdict);
  });
});

const settings = (policy: AmdSettings['policy'], extra: Partial<AmdSettings> = {}): AmdSettings => ({ policy, voicemailMessage: 'leave a message', unknownTreatedAs: 'human', verdictTimeoutMs: 8000, ...extra });

describe('amd step table', () => {
  it('greets at once except under leave_voicemail; always arms the verdict timeout', () => {
    expect(amdStart(settings('leave_voicemail'))).toEqual({ state: { phase: 'awaiting', holding: true }, effects: [{ kind: 'arm_timeout', ms: 8000 }] });
    for (const p of ['hangup_on_machine', 'talk_anyway'] as const) {
      expect(amdStart(settings(p))).toEqual({ state: { phase: 'awaiting', holding: false }, effects: [{ kind: 'greet' }, { kind: 'arm_timeout', ms: 8000 }] });
    }
  });

  type Input = AmdVerdict | 'timeout';
  const rows: Array<[AmdSettings['policy'], Partial<AmdSettings>, Input, unknown[]]> = [
    ['leave_voicemail', {}, 'human', [{ kind: 'greet' }]],
    ['leave_voicemail', {}, 'machine', [{ kind: 'speak_then_hangup', text: 'leave a message', reason: 'voicemail_left' }]],
    ['leave_voicemail', {}, 'unknown', [{ kind: 'greet' }]],
    ['leave_voicemail', {}, 'timeout', [{ kind: 'greet' }]],
    ['leave_voicemail', { unknownTreatedAs: 'machine' }, 'timeout', [{ kind: 'speak_then_hangup', text: 'leave a message', reason: 'voicemail_left' }]],
    ['leave_voicemail', { voicemailMessage: '' }, 'machine', [{ kind: 'hangup', reason: 'answering_machine' }]],
    ['hangup_on_machine', {}, 'human', []],
    ['hangup_on_machine', {}, 'machine', [{ kind: 'hangup', reason: 'answering_machine' }]],
    ['hangup_on_machine', {}, 'timeout', []],
    ['hangup_on_machine', { unknownTreatedAs: 'machine' }, 'unknown', [{ kind: 'hangup', reason: 'answering_machine' }]],
    ['talk_anyway', {}, 'machine', []],
    ['talk_anyway', {}, 'human', []],
  ];
  it.each(rows)('%s %j + %s -> %j', (policy, extra, input, effects) => {
    const s = settings(policy, extra);
    const start = amdStart(s).state;
    const r = amdStep(s, start, input === 'timeout' ? { kind: 'timeout' } : { kind: 'verdict', verdict: input });
    expect(r.effects).toEqual(effects);
    expect(r.state).toMatchObject({ phase: 'decided', holding: false, verdict: input === 'timeout' ? 'unknown' : input });
  });

  it('the first decision is final: a verdict after the timeout is ignored', () => {
    const s = settings('hangup_on_machine');
    const decided = amdStep(s, amdStart(s).state, { kind: 'timeout' }).state;
    const late = amdStep(s, decided, { kind: 'verdict', verdict: 'machine' });
    expect(late.effects).toEqual([]);
    expect(late.state).toBe(decided);
  });
});
