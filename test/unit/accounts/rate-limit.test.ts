import { afterEach, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { MemoryRegistry } from '../../../shared/registry/index.js';
import { AppError } from '../../../shared/errors.js';
import { DEFAULT_RATE_LIMITS, RateLimiter } from '../../../control-plane/accounts/rate-limit.js';

let registry: MemoryRegistry;
afterEach(async () => registry?.close());

async function caught(p: Promise<unknown>): Promise<AppError> {
  try {
    await p;
  } catch (e) {
    return e as AppError;
  }
  throw new Error('expected a rejection');
}

describe('RateLimiter', () => {
  it('allows max per window, then RATE_LIMITED with retry-after = time to the window end', async () => {
    const clock = new SimulatedClock(60_000 * 1000 + 15_000); // 15 s into a minute window
    registry = new MemoryRegistry(clock);
    const rl = new RateLimiter(registry.windows, clock);
    for (let i = 0; i < 10; i++) await rl.hit(['loginPerEmail', 'a@b.co']);
    const err = await caught(rl.hit(['loginPerEmail', 'a@b.co']));
    expect(err.code).toBe('RATE_LIMITED');
    expect(err.options.retryAfterS).toBe(45);
    // other subjects are independent
    await rl.hit(['loginPerEmail', 'c@d.co']);
    clock.advance(45_000);
    await rl.hit(['loginPerEmail', 'a@b.co']);
  });

  it('checks every rule and reports the longest wait', async () => {
    const clock = new SimulatedClock(600_000 * 100);
    registry = new MemoryRegistry(clock);
    const rl = new RateLimiter(registry.windows, clock, { ...DEFAULT_RATE_LIMITS, sendPerIp: { max: 1, windowMs: 60_000 } });
    for (let i = 0; i < 5; i++) await rl.hit(['sendPerEmail', 'x@y.co']).catch(() => {});
    clock.advance(1_000);
    const err = await caught(rl.hit(['sendPerEmail', 'x@y.co'], ['sendPerIp', '10.0.0.1']));
    expect(err.options.retryAfterS).toBe(599); // the 10-minute email window, not the 1-minute IP one
  });
});
