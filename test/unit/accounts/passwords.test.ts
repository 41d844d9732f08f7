import { describe, expect, it } from 'vitest';
import { hashPassword, MAX_CONCURRENT_HASHES, MAX_WAITING_HASHES, verifyPassword } from '../../../control-plane/accounts/passwords.js';
import { AppError } from '../../../shared/errors.js';

describe('scrypt passwords', () => {
  it('stores scrypt$N$r$p$salt$hash with N=2^15, r=8, p=1 and a 16-byte salt', async () => {
    const h = await hashPassword('hunter2hunter2');
    const [alg, N, r, p, salt, hash] = h.split('$');
    expect([alg, N, r, p]).toEqual(['scrypt', '32768', '8', '1']);
    expect(Buffer.from(salt, 'base64url')).toHaveLength(16);
    expect(Buffer.from(hash, 'base64url')).toHaveLength(32);
    expect(h).not.toContain('hunter2');
  });

  it('verifies the right password only; salts differ per hash', async () => {
    const a = await hashPassword('correct horse');
    const b = await hashPassword('correct horse');
    expect(a).not.toBe(b);
    expect(await verifyPassword('correct horse', a)).toBe(true);
    expect(await verifyPassword('correct horse', b)).toBe(true);
    expect(await verifyPassword('correct hors', a)).toBe(false);
    expect(await verifyPassword('', a)).toBe(false);
  });

  it('never matches malformed or hostile stored values', async () => {
    const good = await hashPassword('pw-pw-pw-pw');
    const parts = good.split('$');
    for (const stored of ['!', '', 'scrypt$1$8$1$x$y', good.replace('scrypt', 'bcrypt'), [...parts.slice(0, 1), String(2 ** 30), ...parts.slice(2)].join('$'), parts.slice(0, 5).join('$')]) {
      expect(await verifyPassword('pw-pw-pw-pw', stored), stored.slice(0, 20)).toBe(false);
    }
  });
});

describe('the hashing gate', () => {
  it('a burst past the waiting bound is 503 with retry-after at once; the rest are answered', async () => {
    // A cheap stored hash (verify reads the cost from it): the gate, not scrypt, is under test.
    const cheap = await hashPassword('pw', { N: 16, r: 1, p: 1 });
    const burst = MAX_CONCURRENT_HASHES + MAX_WAITING_HASHES + 10;
    const outcomes = await Promise.all(Array.from({ length: burst }, () => verifyPassword('pw', cheap).catch((e: AppError) => e)));
    const refused = outcomes.filter((o) => o instanceof AppError);
    expect(refused.length).toBeGreaterThanOrEqual(10);
    for (const e of refused) expect([e.code, e.options.retryAfterS]).toEqual(['SERVICE_UNAVAILABLE', 1]);
    expect(outcomes.filter((o) => o === true).length).toBe(burst - refused.length);
    // Nothing is left queued: the next check runs.
    expect(await verifyPassword('pw', cheap)).toBe(true);
  });
});
