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

export type AmdPolicy = 'hangup_on_machine' | 'leave_voicemail' | 'talk_anyway';
export type AmdVerdict = 'human' | 'machine' | 'unknown';

export const AMD_POLICIES = ['disabled', 'hangup_on_machine', 'leave_voicemail', 'talk_anyway'] as const;
/** Clamp of `amd_verdict_timeout_s` (seconds). */
export const AMD_TIMEOUT_S = { min: 2, max: 30, default: 8 } as const;

export interface AmdSettings {
  policy: AmdPolicy;
  /** Spoken to a machine under `leave_voicemail`; empty: hang up without a message. */
  voicemailMessage: string;
  unknownTreatedAs: 'human' | 'machine';
  verdictTimeoutMs: number;
}

/** Messages the actor's mailbox takes besides `CallMsg` (kept here so the AMD plumbing stays in one file). */
export type AmdMsg = { kind: 'amd_verdict'; verdict: AmdVerdict } | { kind: 'amd_timer'; name: 'verdict' | 'hangup' };

/**
 * Settings from agent metadata, or undefined when detection is off: `amd_enabled` not true,
 * policy `disabled`, or a policy string we do not know (silently disabled, as the spec says).
 */
export function amdSettings(metadata: Record<string, unknown> | undefined): AmdSettings | undefined {
  const m = metadata ?? {};
  if (!truthy(m.amd_enabled)) return undefined;
  const policy = typeof m.amd_policy === 'string' ? m.amd_policy.trim() : 'hangup_on_machine';
  if (policy !== 'hangup_on_machine' && policy !== 'leave_voicemail' && policy !== 'talk_anyway') return undefined;
  return {
    policy,
    voicemailMessage: typeof m.amd_voicemail_message === 'string' ? m.amd_voicemail_message.trim() : '',
    unknownTreatedAs: m.amd_unknown_treated_as === 'machine' ? 'machine' : 'human',
    verdictTimeoutMs: clampTimeoutS(m.amd_verdict_timeout_s) * 1000,
  };
}

export function clampTimeoutS(raw: unknown): number {
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  if (typeof n !== 'number' || !Number.isFinite(n)) return AMD_TIMEOUT_S.default;
  return Math.min(AMD_TIMEOUT_S.max, Math.max(AMD_TIMEOUT_S.min, n));
}

/** The carrier's `AnsweredBy` (human, machine_start, machine_end_beep, ..., fax, unknown) -> verdict. */
export function verdictFromAnsweredBy(answeredBy: string): AmdVerdict {
  const a = answeredBy.trim().toLowerCase();
  if (a === 'human') return 'human';
  if (a.startsWith('machine') || a === 'fax') return 'machine';
  return 'unknown';
}

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

function truthy(v: unknown): boolean {
  return v === true || v === 1 || (typeof v === 'string' && /^(true|1|yes|on)$/i.test(v.trim()));
}
