/**
 * What a finished attempt means for its contact (spec doc 2, "Campaign contact row"): pure, so the
 * retry rules are table-tested. Answered calls and calls the carrier rejected are never dialed
 * again; unanswered, busy and cancelled-before-answer calls are retried with a doubling delay
 * until `max_retries` retries are spent (docs/campaigns.md, "Retries").
 */
import type { Outcome } from './dial-store.js';

/** Longest delay between two attempts of one contact. */
export const MAX_BACKOFF_MS = 60 * 60 * 1000;

/** Delay before the retry that follows attempt number `attempt` (1-based): base, 2 x base, 4 x base, ... */
export function backoffMs(attempt: number, baseMs: number): number {
  return Math.min(MAX_BACKOFF_MS, baseMs * 2 ** Math.max(0, attempt - 1));
}

export interface AttemptEnd {
  /** The carrier's final `CallStatus` (`completed`, `busy`, `no-answer`, `failed`, `canceled`) or an end reason. */
  carrierStatus: string;
  /** The callee (person or machine) picked up. */
  answered: boolean;
  amdVerdict: string;
  durationS?: number;
}

/** Machine verdicts of the carrier's async AMD (`machine_start`, `machine_end_beep`, `fax`, ...). */
export function isMachine(verdict: string): boolean {
  return verdict.startsWith('machine') || verdict === 'fax';
}

/** `carrierStatus` of a dial the carrier failed (5xx, 429) or never confirmed: retried like an unanswered call. */
export const CARRIER_ERROR = 'carrier_error';

export function outcomeOf(end: AttemptEnd, attempts: number, maxRetries: number, nowMs: number, retryBaseMs: number): Outcome {
  if (end.answered) {
    return { status: isMachine(end.amdVerdict) ? 'voicemail' : 'completed', durationS: end.durationS ?? 0 };
  }
  if (end.carrierStatus === 'failed') return { status: 'failed', error: 'the carrier rejected the call (failed)' };
  const why = end.carrierStatus === 'busy' ? 'busy' : end.carrierStatus === CARRIER_ERROR ? 'carrier error' : 'no answer';
  if (attempts >= 1 + maxRetries) return { status: 'failed', error: `${why} after ${attempts} attempt${attempts === 1 ? '' : 's'}` };
  return { status: 'queued', retryAtMs: nowMs + backoffMs(attempts, retryBaseMs), error: `${why} (attempt ${attempts} of ${1 + maxRetries})` };
}
