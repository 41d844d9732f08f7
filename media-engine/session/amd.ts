/**
 * Answering-machine detection policy (spec "Answering-machine detection" and the AMD behaviour
 * paragraph). Pure: agent metadata -> settings, and a step function `(settings, state, input) ->
 * {state, effects}` that the CallActor runs and whose effects it carries out. The carrier does the
 * detecting (asynchronous AMD requested at dial time); its verdict reaches the control plane, which
 * routes it to the node owning the call as a registry command `{kind: 'amd', payload: {verdict}}`.
 *
 * | policy            | greeting                   | human   | machine                          |
 * |-------------------|----------------------------|---------|----------------------------------|
 * | leave_voicemail   | held until the verdict     | greet   | play amd_voicemail_message, hang up |
 * | hangup_on_machine | at once                    | -       | hang up                          |
 * | talk_anyway       | at once                    | -       | - (verdict only recorded)        |
 * | disabled / other  | at once, no detection      |         |                                  |
 *
 * `unknown` (including no verdict within the timeout) counts as `amd_unknown_treated_as`
 * (default human). The first decision is final: a verdict after the timeout is ignored.
 */

import type { AmdSettings, AmdVerdict } from '../../shared/voice/amd.js';

/** Messages the actor's mailbox takes besides `CallMsg` (kept here so the AMD plumbing stays in one file). */
export type AmdMsg = { kind: 'amd_verdict'; verdict: AmdVerdict } | { kind: 'amd_timer'; name: 'verdict' };

export interface AmdState {
  /** `awaiting` until the first verdict or the timeout. */
  phase: 'awaiting' | 'decided';
  /** Greeting (and caller turns) held until the verdict. */
  holding: boolean;
  verdict?: AmdVerdict;
  /** What the verdict counted as after `unknownTreatedAs`. */
  treatedAs?: 'human' | 'machine';
}

export type AmdEffect =
  | { kind: 'greet' }
  | { kind: 'arm_timeout'; ms: number }
  | { kind: 'speak_then_hangup'; text: string; reason: string }
  | { kind: 'hangup'; reason: string };

export type AmdInput = { kind: 'verdict'; verdict: AmdVerdict } | { kind: 'timeout' };

/** At call start: hold the greeting (leave_voicemail) or greet now; always wait for a verdict. */
export function amdStart(s: AmdSettings): { state: AmdState; effects: AmdEffect[] } {
  const holding = s.policy === 'leave_voicemail';
  const effects: AmdEffect[] = [{ kind: 'arm_timeout', ms: s.verdictTimeoutMs }];
  if (!holding) effects.unshift({ kind: 'greet' });
  return { state: { phase: 'awaiting', holding }, effects };
}

export function amdStep(s: AmdSettings, state: AmdState, input: AmdInput): { state: AmdState; effects: AmdEffect[] } {
  if (state.phase === 'decided') return { state, effects: [] };
  const verdict: AmdVerdict = input.kind === 'timeout' ? 'unknown' : input.verdict;
  const treatedAs = verdict === 'unknown' ? s.unknownTreatedAs : verdict;
  const next: AmdState = { phase: 'decided', holding: false, verdict, treatedAs };
  const effects: AmdEffect[] = [];
  if (s.policy === 'leave_voicemail') {
    if (treatedAs === 'human') effects.push({ kind: 'greet' });
    else if (s.voicemailMessage) effects.push({ kind: 'speak_then_hangup', text: s.voicemailMessage, reason: 'voicemail_left' });
    else effects.push({ kind: 'hangup', reason: 'answering_machine' });
  } else if (s.policy === 'hangup_on_machine' && treatedAs === 'machine') {
    effects.push({ kind: 'hangup', reason: 'answering_machine' });
  }
  return { state: next, effects };
}
