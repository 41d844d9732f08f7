/**
 * The delivery schedule and outcome rules (spec doc 3, "Delivery rules" 1-4, "Limits"): pure
 * functions so the schedule is tested on numbers, not by sleeping.
 */

/** Five attempts in total. */
export const MAX_ATTEMPTS = 5;
/** Waits after attempts 1, 2, 3 and 4. */
export const RETRY_WAITS_MS = [30_000, 120_000, 600_000, 1_800_000] as const;
/** Each wait is stretched by up to this fraction. */
export const JITTER_FRACTION = 0.2;
/** `Retry-After` on 429/503 overrides the schedule up to this. */
export const RETRY_AFTER_CAP_MS = 3_600_000;
/**
 * ... and down to this: a receiver answering `Retry-After: 0` (or a date already past) spent all
 * five attempts in about 2 s, so a busy receiver lost the event at once.
 */
export const RETRY_AFTER_FLOOR_MS = 5_000;
/** Per attempt (request sent to response headers and body excerpt). */
export const ATTEMPT_TIMEOUT_MS = 10_000;

/** What one attempt came to. `status` absent: no response (timeout, DNS, TLS, connection, refused address). */
export interface AttemptResult {
  status?: number;
  retryAfter?: string | null;
  error?: string;
  /** The refusal was the address policy (a private address at dial time): never retried. */
  refused?: boolean;
}

export type Verdict = 'delivered' | 'retry' | 'dead';

/** Rule 4: 2xx delivered; 408, 425, 429, 5xx and network failures retry; other 4xx and any 3xx are dead at once. */
export function classify(r: AttemptResult): Verdict {
  if (r.status === undefined) return r.refused ? 'dead' : 'retry';
  if (r.status >= 200 && r.status < 300) return 'delivered';
  if (r.status === 408 || r.status === 425 || r.status === 429 || r.status >= 500) return 'retry';
  return 'dead';
}

/**
 * Wait before the next attempt after attempt number `attempt` (1-based) failed retryably; undefined
 * when the attempts are spent. `random` in [0, 1) (injected so tests pin the jitter).
 */
export function nextWaitMs(attempt: number, r: AttemptResult, nowMs: number, random: number): number | undefined {
  if (attempt >= MAX_ATTEMPTS) return undefined;
  if (r.status === 429 || r.status === 503) {
    const override = retryAfterMs(r.retryAfter, nowMs);
    if (override !== undefined) return Math.min(Math.max(override, RETRY_AFTER_FLOOR_MS), RETRY_AFTER_CAP_MS);
  }
  const base = RETRY_WAITS_MS[attempt - 1];
  return Math.round(base * (1 + JITTER_FRACTION * random));
}

/**
 * `Retry-After` (seconds) of a 429 `TEST_LIMIT`: until the earliest un-sent ping's next attempt is
 * over, i.e. its due time (now, when due or in flight) plus the per-attempt timeout. A slot frees
 * when that attempt delivers or spends the last retry; if it fails again, the next 429 names the
 * new due time. Whole seconds, 1 s to 1 h (the delivery rules' cap).
 */
export function testLimitRetryAfterS(earliestDueMs: number | null, nowMs: number): number {
  const dueMs = Math.max(earliestDueMs ?? nowMs, nowMs);
  const s = Math.ceil((dueMs + ATTEMPT_TIMEOUT_MS - nowMs) / 1000);
  return Math.min(Math.max(s, 1), RETRY_AFTER_CAP_MS / 1000);
}

/** `Retry-After`: delta seconds or an HTTP date. Unparseable or negative: ignored. */
export function retryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  if (!value) return undefined;
  const v = value.trim();
  if (/^\d+$/.test(v)) return Number(v) * 1000;
  // An HTTP date names a weekday and month ("Wed, 21 Oct 2026 07:28:00 GMT"); Date.parse alone
  // would also read "-3" or "2" as years.
  if (!/[a-z]{3}/i.test(v)) return undefined;
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}
