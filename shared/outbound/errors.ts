/**
 * Errors of the outbound client. A refusal is an AppError with the stable code `OUTBOUND_REFUSED`
 * (400 where it reaches an API edge; a tool error result or a non-retryable provider error during
 * a call). Its message names the host and the rule, never a resolved address or the path.
 */
import { AppError } from '../errors.js';

const MAX_HOST_CHARS = 253;

export function outboundRefused(host: string, why: string): AppError {
  return new AppError('OUTBOUND_REFUSED', `outbound request to "${host.slice(0, MAX_HOST_CHARS)}" refused: ${why}`);
}

/** Resolved to / is a loopback, private, link-local, ... address not listed in OUTBOUND_ALLOW_CIDRS. */
export function notPublic(host: string): AppError {
  return outboundRefused(host, 'not a public address (operators may allow it with OUTBOUND_ALLOW_CIDRS)');
}

export function isOutboundRefused(err: unknown): err is AppError {
  return err instanceof AppError && err.code === 'OUTBOUND_REFUSED';
}

/**
 * undici wraps connect errors (`TypeError: fetch failed` with `cause`), net wraps nothing: walks
 * a short cause chain looking for our refusal.
 */
export function findOutboundRefusal(err: unknown): AppError | undefined {
  let cur: unknown = err;
  for (let depth = 0; depth < 5 && cur; depth++) {
    if (isOutboundRefused(cur)) return cur;
    cur = (cur as { cause?: unknown }).cause;
  }
  return undefined;
}
