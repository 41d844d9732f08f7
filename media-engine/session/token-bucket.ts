/**
 * A token bucket on the injected clock (time is injected), so tests drive refills with a
 * simulated clock. Hand-written rather than a library: the npm limiters read `Date.now()` and
 * carry timers or async APIs; this is a dozen lines of arithmetic with no timer at all.
 */
import type { Clock } from '../../shared/clock.js';

export class TokenBucket {
  private tokens: number;
  private lastMs: number;

  constructor(
    private readonly clock: Clock,
    /** Bucket size: how many takes succeed at once when full. */
    readonly capacity: number,
    /** Tokens added per second, up to `capacity`. */
    readonly refillPerS: number,
  ) {
    this.tokens = capacity;
    this.lastMs = clock.monotonicMs();
  }

  /** Takes one token if there is one. */
  take(): boolean {
    this.refill();
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Milliseconds until the next token (0 when one is available now). */
  retryAfterMs(): number {
    this.refill();
    if (this.tokens >= 1) return 0;
    // Rounded to microseconds first: 0.999 tokens must say 1 ms, not 2 (float noise).
    return Math.ceil(Math.round(((1 - this.tokens) / this.refillPerS) * 1_000_000) / 1000);
  }

  private refill(): void {
    const now = this.clock.monotonicMs();
    const elapsedMs = Math.max(0, now - this.lastMs);
    this.lastMs = now;
    this.tokens = Math.min(this.capacity, this.tokens + (elapsedMs / 1000) * this.refillPerS);
  }
}
