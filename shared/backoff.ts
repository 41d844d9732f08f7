/**
 * Exponential backoff with full jitter ("Exponential Backoff And Jitter", AWS Architecture Blog,
 * 2015): the wait before retry n is uniform in [0, min(maxMs, baseMs * 2^(n-1))]. Full jitter
 * spreads the retries of many callers that failed together (a tool endpoint that went down under
 * every call on the node) instead of sending them back in synchronized waves.
 *
 * Time and randomness come from the caller (time is injected), so tests drive both.
 */
import { sleepOn, type Clock } from './clock.js';

export interface BackoffOptions {
  /** Ceiling of the first retry's wait. Default 200 ms. */
  baseMs?: number;
  /** Ceiling of any wait. Default 5000 ms. */
  maxMs?: number;
  /** Uniform in [0, 1). Default Math.random. */
  random?: () => number;
}

export const DEFAULT_BACKOFF = { baseMs: 200, maxMs: 5000 } as const;

/** Wait before retry `retry` (1 = the first retry), in whole ms, within [0, min(maxMs, baseMs * 2^(retry-1))]. */
export function backoffDelayMs(retry: number, opts: BackoffOptions = {}): number {
  const baseMs = Math.max(0, opts.baseMs ?? DEFAULT_BACKOFF.baseMs);
  const maxMs = Math.max(0, opts.maxMs ?? DEFAULT_BACKOFF.maxMs);
  // 2^30 already exceeds any sane maxMs; capping the exponent keeps the number finite.
  const ceilingMs = Math.min(maxMs, baseMs * 2 ** Math.min(30, Math.max(0, retry - 1)));
  const r = Math.min(Math.max((opts.random ?? Math.random)(), 0), 1);
  return Math.floor(r * ceilingMs);
}

/**
 * Sleeps the backoff for `retry` on `clock`; rejects with `abortError()` as soon as `signal`
 * aborts. Resolves with the waited ms.
 */
export async function sleepBackoff(clock: Clock, retry: number, signal: AbortSignal, abortError: () => Error, opts: BackoffOptions = {}): Promise<number> {
  const ms = backoffDelayMs(retry, opts);
  await sleepOn(clock, ms, signal, abortError);
  return ms;
}
