/**
 * The portal's request rate limit (spec doc 3 "Limits"): a token bucket per client IP refilling at
 * 100 requests per second with a burst of 200; an empty bucket is 429 RATE_LIMITED with
 * `Retry-After` (whole seconds until one token is back, at least 1).
 *
 * In-process, not in the registry: at 100 rps a Redis round trip per request would cost more than
 * the routes themselves, and a bucket is a flood guard, not a quota. With N replicas behind a
 * balancer a client gets up to N times the rate (documented in docs/portal.md). Bounded: an LRU of
 * at most `maxClients` buckets; an evicted bucket starts full again, which only errs towards
 * letting a request through.
 */
import { LRUCache } from 'lru-cache';
import type { Clock } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';

export interface TokenBucketOptions {
  ratePerS: number;
  burst: number;
  maxClients: number;
}

export const PORTAL_RATE: TokenBucketOptions = { ratePerS: 100, burst: 200, maxClients: 50_000 };

interface Bucket {
  tokens: number;
  atMs: number;
}

export class TokenBuckets {
  private readonly buckets: LRUCache<string, Bucket>;

  constructor(
    private readonly clock: Clock,
    readonly opts: TokenBucketOptions = PORTAL_RATE,
  ) {
    this.buckets = new LRUCache({ max: opts.maxClients });
  }

  /** Takes one token for `ip`; throws RATE_LIMITED when none is left. */
  take(ip: string): void {
    const now = this.clock.monotonicMs();
    const b = this.buckets.get(ip) ?? { tokens: this.opts.burst, atMs: now };
    b.tokens = Math.min(this.opts.burst, b.tokens + ((now - b.atMs) / 1000) * this.opts.ratePerS);
    b.atMs = now;
    if (b.tokens < 1) {
      this.buckets.set(ip, b);
      const retryAfterS = Math.max(1, Math.ceil((1 - b.tokens) / this.opts.ratePerS));
      throw new AppError('RATE_LIMITED', `too many requests; retry in ${retryAfterS} s`, { retryAfterS });
    }
    b.tokens -= 1;
    this.buckets.set(ip, b);
  }
}
