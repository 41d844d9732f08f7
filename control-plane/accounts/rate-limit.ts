/**
 * Rate limits on the unauthenticated auth routes (the dashboard's and the agent portal's login), counted in the shared registry (Redis across
 * replicas) with fixed windows. The window index is part of the key, so `retry-after` is exactly
 * the time to the window's end. Subjects (emails, IPs) are hashed: no PII in Redis keys.
 */
import { createHash } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import type { RateLimitWindows } from '../../shared/registry/index.js';
import { AppError } from '../../shared/errors.js';

export interface Limit {
  /** Requests allowed per window. */
  max: number;
  windowMs: number;
}

export interface RateLimits {
  /** POST /auth/login per email (default 10/min) and per IP (default 30/min). */
  loginPerEmail: Limit;
  loginPerIp: Limit;
  /** POST /auth/verify-otp per email (10/min) and per IP (30/min). */
  verifyPerEmail: Limit;
  verifyPerIp: Limit;
  /** Mail-sending routes (register, resend-otp) per email (5 per 10 min) and per IP (30/min). */
  sendPerEmail: Limit;
  sendPerIp: Limit;
  /** POST /auth/refresh per IP (60/min). */
  refreshPerIp: Limit;
  /**
   * POST /agent-portal/login per IP (120/min: a call centre's agents sign in from one office
   * address at a shift's start) and per workspace and agent code (10/min). Each attempt costs a
   * password hash; the portal's per-IP request bucket (100/s) alone let one client queue minutes of them.
   */
  portalLoginPerIp: Limit;
  portalLoginPerCode: Limit;
}

const MINUTE_MS = 60_000;

export const DEFAULT_RATE_LIMITS: RateLimits = {
  loginPerEmail: { max: 10, windowMs: MINUTE_MS },
  loginPerIp: { max: 30, windowMs: MINUTE_MS },
  verifyPerEmail: { max: 10, windowMs: MINUTE_MS },
  verifyPerIp: { max: 30, windowMs: MINUTE_MS },
  sendPerEmail: { max: 5, windowMs: 10 * MINUTE_MS },
  sendPerIp: { max: 30, windowMs: MINUTE_MS },
  refreshPerIp: { max: 60, windowMs: MINUTE_MS },
  portalLoginPerIp: { max: 120, windowMs: MINUTE_MS },
  portalLoginPerCode: { max: 10, windowMs: MINUTE_MS },
};

export class RateLimiter {
  constructor(
    private readonly windows: RateLimitWindows,
    private readonly clock: Clock,
    readonly limits: RateLimits = DEFAULT_RATE_LIMITS,
  ) {}

  /** Counts one attempt against every rule; throws RATE_LIMITED (with retry-after) when one is over. */
  async hit(...rules: Array<[name: keyof RateLimits, subject: string]>): Promise<void> {
    const now = this.clock.now();
    let retryAfterMs = 0;
    for (const [name, subject] of rules) {
      const limit = this.limits[name];
      const window = Math.floor(now / limit.windowMs);
      const key = `acct:${name}:${createHash('sha256').update(subject).digest('base64url').slice(0, 22)}:${window}`;
      const count = await this.windows.incrWindow(key, limit.windowMs);
      if (count > limit.max) retryAfterMs = Math.max(retryAfterMs, (window + 1) * limit.windowMs - now);
    }
    if (retryAfterMs > 0) {
      const retryAfterS = Math.max(1, Math.ceil(retryAfterMs / 1000));
      throw new AppError('RATE_LIMITED', `too many attempts; retry in ${retryAfterS} s`, { retryAfterS });
    }
  }
}
