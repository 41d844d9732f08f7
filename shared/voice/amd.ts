/**
 * Answering-machine detection settings: what both halves need to agree on. The control plane
 * validates `amd_policy` / `amd_verdict_timeout_s` when a number is bound, asks the carrier for
 * detection when it dials, and maps the carrier's `AnsweredBy` to a verdict; the media engine
 * parses the same agent metadata into the settings its AMD step function runs on
 * (`media-engine/session/amd.ts`, which documents the policy table).
 *
 * `unknown` (including no verdict within the timeout) counts as `amd_unknown_treated_as`
 * (default human).
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

function truthy(v: unknown): boolean {
  return v === true || v === 1 || (typeof v === 'string' && /^(true|1|yes|on)$/i.test(v.trim()));
}
