import { describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { SimulatedClock } from '../../../shared/clock.js';
import { ACCESS_TOKEN_TTL_S, looksLikeJwt, sha256Hex, TokenService } from '../../../control-plane/accounts/tokens.js';

const key = new TextEncoder().encode('k'.repeat(32));

describe('access tokens', () => {
  it('HS256 with sub, sid, iss voiceplane, typ access, a jti and exp = iat + 3600', async () => {
    const clock = new SimulatedClock(1_800_000_000_000);
    const t = new TokenService(key, clock);
    const jwt = await t.signAccess({ userId: 'u1', sessionId: 's1' });
    const [h, p] = jwt.split('.').slice(0, 2).map((x) => JSON.parse(Buffer.from(x, 'base64url').toString()));
    expect(h.alg).toBe('HS256');
    expect(p).toMatchObject({ sub: 'u1', sid: 's1', iss: 'voiceplane', typ: 'access', iat: 1_800_000_000, exp: 1_800_000_000 + ACCESS_TOKEN_TTL_S });
    expect(typeof p.jti).toBe('string');
    expect(await t.verifyAccess(jwt)).toEqual({ userId: 'u1', sessionId: 's1', expiresAtMs: (1_800_000_000 + ACCESS_TOKEN_TTL_S) * 1000 });
    clock.advance(3599_000);
    expect(await t.verifyAccess(jwt)).toBeDefined();
    clock.advance(2_000);
    expect(await t.verifyAccess(jwt)).toBeUndefined();
  });

  it('rejects another key, another typ, another issuer and alg none', async () => {
    const clock = new SimulatedClock(Date.now());
    const t = new TokenService(key, clock);
    const other = await new TokenService(new TextEncoder().encode('x'.repeat(32)), clock).signAccess({ userId: 'u', sessionId: 's' });
    expect(await t.verifyAccess(other)).toBeUndefined();
    const nowS = Math.floor(clock.now() / 1000);
    const base = (claims: Record<string, unknown>, iss = 'voiceplane') =>
      new SignJWT(claims).setProtectedHeader({ alg: 'HS256' }).setSubject('u').setIssuer(iss).setJti('j').setIssuedAt(nowS).setExpirationTime(nowS + 60).sign(key);
    expect(await t.verifyAccess(await base({ typ: 'refresh', sid: 's' }))).toBeUndefined();
    expect(await t.verifyAccess(await base({ typ: 'access', sid: 's' }, 'someone-else'))).toBeUndefined();
    expect(await t.verifyAccess(await base({ typ: 'access' }))).toBeUndefined();
    const good = await base({ typ: 'access', sid: 's' });
    expect(await t.verifyAccess(good)).toEqual({ userId: 'u', sessionId: 's', expiresAtMs: (nowS + 60) * 1000 });
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${good.split('.')[1]}.`;
    expect(await t.verifyAccess(none)).toBeUndefined();
  });
});

describe('keys and codes', () => {
  const t = new TokenService(key, new SimulatedClock());

  it('API keys: vpk_ + 32 random bytes base64url; refresh tokens are distinct and long', () => {
    const k = t.newApiKey();
    expect(k).toMatch(/^vpk_[A-Za-z0-9_-]{43}$/);
    expect(t.newApiKey()).not.toBe(k);
    expect(t.newRefreshToken().length).toBeGreaterThan(40);
    expect(looksLikeJwt(k)).toBe(false);
    expect(looksLikeJwt('a.b.c')).toBe(true);
    expect(sha256Hex(k)).toMatch(/^[0-9a-f]{64}$/);
  });

  it('codes: 6 digits; HMAC bound to the user and the server key', () => {
    for (let i = 0; i < 50; i++) expect(t.newOtpCode()).toMatch(/^\d{6}$/);
    const h = t.otpHash('user-1', '123456');
    expect(t.otpMatches('user-1', '123456', h)).toBe(true);
    expect(t.otpMatches('user-1', '123457', h)).toBe(false);
    expect(t.otpMatches('user-2', '123456', h)).toBe(false);
    expect(new TokenService(new TextEncoder().encode('z'.repeat(32)), new SimulatedClock()).otpHash('user-1', '123456')).not.toBe(h);
    expect(t.otpMatches('user-1', '123456', 'abc')).toBe(false);
  });
});
