/**
 * Admission of injected text (`text_inject` socket frames and `POST /voice/sessions/{id}/text`),
 * decided when it arrives, before anything reaches the LLM. Issue 11, "`max_turns` bypass": 100
 * frames in a burst used to give 101 turns and 101 LLM requests on a call capped at 50.
 *
 * Checks, in order (the first that fails refuses; only an accepted injection spends a token):
 * 1. text: non-empty after trimming, at most `INJECT_TEXT_MAX_CHARS`         -> `INVALID_REQUEST`
 * 2. the call is ending (goodbye or voicemail message playing)               -> `CONFLICT`
 * 3. role `user` and `max_turns` reached: it cannot become a turn            -> `CONFLICT`
 * 4. role `user` folded into a pending caller turn that would exceed
 *    `INJECT_TEXT_MAX_CHARS` (the bounded queue, see the actor)              -> `RATE_LIMITED`
 * 5. the call's token bucket is empty (both roles)                           -> `RATE_LIMITED`
 * Codes are the shared `ErrorCode`s so a command reply can carry them to the REST edge unchanged.
 */
import type { Clock } from '../../shared/clock.js';
import type { ErrorCode } from '../../shared/errors.js';
import { INJECT_TEXT_MAX_CHARS, type CallLimits } from './limits.js';
import { TokenBucket } from './token-bucket.js';

export type InjectRefusalReason = 'empty' | 'too_long' | 'call_ending' | 'max_turns' | 'pending_full' | 'rate_limited';

export type InjectVerdict =
  | { ok: true }
  | { ok: false; code: Extract<ErrorCode, 'INVALID_REQUEST' | 'CONFLICT' | 'RATE_LIMITED'>; reason: InjectRefusalReason; message: string; retryAfterMs?: number };

/** What the call looks like when the injection arrives. */
export interface InjectContext {
  ending: boolean;
  maxTurnsReached: boolean;
  /** Characters already waiting in the caller turn this text would be folded into; undefined: it would not be folded. */
  pendingChars?: number;
}

export type InjectCounts = Record<'accepted' | InjectRefusalReason, number>;

export class InjectionGate {
  private readonly bucket: TokenBucket;
  /** Accepted and refused injections of this call, by reason (logged when the call ends). */
  readonly counts: InjectCounts = { accepted: 0, empty: 0, too_long: 0, call_ending: 0, max_turns: 0, pending_full: 0, rate_limited: 0 };

  constructor(clock: Clock, limits: Pick<CallLimits, 'injectBurst' | 'injectRefillPerS'>) {
    this.bucket = new TokenBucket(clock, limits.injectBurst, limits.injectRefillPerS);
  }

  admit(text: string, role: 'user' | 'system', call: InjectContext): InjectVerdict {
    const verdict = this.check(text, role, call);
    if (verdict.ok) this.counts.accepted++;
    else this.counts[verdict.reason]++;
    return verdict;
  }

  /** An accepted injection refused when its turn came (the call reached its cap or began ending meanwhile). */
  recountRefused(reason: InjectRefusalReason): void {
    this.counts.accepted--;
    this.counts[reason]++;
  }

  /** True once anything was refused (worth a log line at the end of the call). */
  get anyRefused(): boolean {
    return Object.entries(this.counts).some(([k, n]) => k !== 'accepted' && n > 0);
  }

  private check(text: string, role: 'user' | 'system', call: InjectContext): InjectVerdict {
    if (text.trim() === '') return { ok: false, code: 'INVALID_REQUEST', reason: 'empty', message: 'injected text is empty' };
    if (text.length > INJECT_TEXT_MAX_CHARS) {
      return { ok: false, code: 'INVALID_REQUEST', reason: 'too_long', message: `injected text must be at most ${INJECT_TEXT_MAX_CHARS} characters` };
    }
    if (call.ending) return { ok: false, code: 'CONFLICT', reason: 'call_ending', message: 'the call is ending' };
    if (role === 'user' && call.maxTurnsReached) {
      return { ok: false, code: 'CONFLICT', reason: 'max_turns', message: 'max_turns reached: the call ends after the current answer' };
    }
    if (role === 'user' && call.pendingChars !== undefined && call.pendingChars + 1 + text.length > INJECT_TEXT_MAX_CHARS) {
      return { ok: false, code: 'RATE_LIMITED', reason: 'pending_full', message: 'too much text waiting for the agent to finish speaking', retryAfterMs: 1000 };
    }
    if (!this.bucket.take()) {
      return { ok: false, code: 'RATE_LIMITED', reason: 'rate_limited', message: 'injected text rate limit exceeded', retryAfterMs: this.bucket.retryAfterMs() };
    }
    return { ok: true };
  }
}
