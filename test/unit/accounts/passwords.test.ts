import { describe, expect, it } from 'vitest';
import { hashPassword, verifyPassword } from '../../../control-plane/accounts/passwords.js';

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
