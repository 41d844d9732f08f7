/**
 * TTS retry as a decorator of the same interface (providers sit behind small interfaces; like agents-js
 * fallback_adapter). A synthesis that fails BEFORE its first chunk is retried with backoff; once a
 * chunk was yielded the caller has played audio, so a replay would repeat words: later failures
 * surface as they are. The callbacks let the engine emit `tts_retry {attempt, backoff_ms}` and
 * `tts_retry_exhausted {attempt}`.
 */
import { backoffDelayMs } from '../backoff.js';
import { realClock, type Clock } from '../clock.js';
import { ProviderError } from './errors.js';
import { sleepMs } from './http.js';
import type { PcmChunk, TtsProvider, TtsRequest } from './types.js';

export interface TtsRetryOptions {
  /** Total attempts including the first. Default 3. */
  maxAttempts?: number;
  /**
   * Ceiling of the wait before retry n (1-based): base * 2^(n-1), capped at maxRetryAfterMs, with
   * full jitter (shared/backoff.ts), unless the vendor sent Retry-After. Default 200.
   */
  baseBackoffMs?: number;
  /** A vendor Retry-After above this is not waited for: the turn gives up at once. Default 5000. */
  maxRetryAfterMs?: number;
  /** Jitter draw in [0, 1). Default Math.random (tests pin it). */
  random?: () => number;
  /** Called before sleeping; `attempt` is the attempt that just failed (1-based). */
  onRetry?(attempt: number, backoffMs: number, cause: unknown): void;
  /** Called when a retryable failure used up the last attempt; `attempt` is that last attempt. */
  onExhausted?(attempt: number, cause: unknown): void;
  clock?: Clock;
}

/** Whether a failure before the first chunk is worth another attempt. */
function isRetryable(e: unknown): boolean {
  if (e instanceof ProviderError) return e.retryable && e.code !== 'ABORTED';
  // Errors from providers that do not speak ProviderError (a sim throwing a plain Error): before
  // any audio a retry costs little, so give them the benefit of the doubt.
  return true;
}

export function withTtsRetry(provider: TtsProvider, opts: TtsRetryOptions = {}): TtsProvider {
  const maxAttempts = Math.max(1, opts.maxAttempts ?? 3);
  const baseBackoffMs = opts.baseBackoffMs ?? 200;
  const maxRetryAfterMs = opts.maxRetryAfterMs ?? 5_000;
  const clock = opts.clock ?? realClock;

  /** The first chunk of `req`, retrying failures before it; afterwards `it` is the attempt's stream. */
  async function firstChunk(req: TtsRequest, committed: (it: AsyncIterator<PcmChunk>) => void): Promise<IteratorResult<PcmChunk>> {
    for (let attempt = 1; ; attempt++) {
      const it = provider.synthesize(req)[Symbol.asyncIterator]();
      try {
        const first = await it.next();
        committed(it);
        return first;
      } catch (e) {
        if (req.signal.aborted || !isRetryable(e)) throw e;
        const retryAfterMs = e instanceof ProviderError ? e.retryAfterMs : undefined;
        if (attempt >= maxAttempts || (retryAfterMs ?? 0) > maxRetryAfterMs) {
          opts.onExhausted?.(attempt, e);
          throw e;
        }
        const backoffMs = retryAfterMs ?? backoffDelayMs(attempt, { baseMs: baseBackoffMs, maxMs: maxRetryAfterMs, random: opts.random });
        opts.onRetry?.(attempt, backoffMs, e);
        await sleepMs(clock, backoffMs, req.signal, provider.label);
      }
    }
  }

  /**
   * Once the first chunk is there, the attempt's own iterator answers every `next()`: no async
   * generator in between, which cost several promises and microtask hops per 20-40 ms chunk (the
   * largest source of garbage in the engine bench's allocation profile after the sim providers).
   * A consumer stopping early (barge-in `break`) calls `return()`, which returns the inner iterator
   * so it cancels its vendor request.
   */
  function synthesize(req: TtsRequest): AsyncIterableIterator<PcmChunk> {
    let inner: AsyncIterator<PcmChunk> | undefined;
    let stopped = false;
    const done = (): Promise<IteratorResult<PcmChunk>> => Promise.resolve({ value: undefined, done: true });
    const iterator: AsyncIterableIterator<PcmChunk> = {
      next: () => {
        if (stopped) return done();
        if (inner) return inner.next();
        const first = firstChunk(req, (it) => {
          // A consumer that returned while the first chunk was pending: cancel this attempt too.
          if (stopped) void it.return?.();
          else inner = it;
        });
        // A synthesis that failed before its first chunk is over: a later next() must not start another.
        first.catch(() => (stopped = true));
        return first;
      },
      return: async () => {
        stopped = true;
        const it = inner;
        inner = undefined;
        await it?.return?.();
        return { value: undefined, done: true };
      },
      [Symbol.asyncIterator]: () => iterator,
    };
    return iterator;
  }

  const wrapped: TtsProvider = {
    label: provider.label,
    capabilities: provider.capabilities,
    synthesize: (req) => synthesize(req),
  };
  if (provider.warm) wrapped.warm = () => provider.warm!();
  return wrapped;
}
