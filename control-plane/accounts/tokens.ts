/**
 * Credentials: HS256 access tokens (jose), opaque refresh tokens, API keys and one-time codes.
 * Everything bearer-like is stored only as a hash: SHA-256 for high-entropy values (keys, refresh
 * tokens), HMAC-SHA256 with a server key for the 6-digit codes (20 bits: a plain hash would be
 * reversible by brute force).
 */
import { createHash, createHmac, createSecretKey, randomBytes, randomInt, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { SignJWT, jwtVerify } from 'jose';
import type { Clock } from '../../shared/clock.js';

export const ACCESS_TOKEN_TTL_S = 3600;
export const REFRESH_TOKEN_TTL_MS = 30 * 24 * 3600 * 1000;
export const ISSUER = 'voiceplane';
/** Recognisable prefix of user API keys (secret scanners can match it). */
export const API_KEY_PREFIX = 'vpk_';
const REFRESH_PREFIX = 'vprt_';

export interface AccessClaims {
  userId: string;
  sessionId: string;
}

export class TokenService {
  private readonly otpKey: Buffer;
  private readonly signingKey: KeyObject;

  constructor(
    jwtKey: Uint8Array,
    private readonly clock: Clock,
  ) {
    // A separate key per purpose: a leaked OTP hash table says nothing about the JWT key.
    this.otpKey = createHmac('sha256', Buffer.from(jwtKey)).update('voiceplane:otp:v1').digest();
    // A KeyObject made once: jose imports a raw Uint8Array key again on every sign/verify.
    this.signingKey = createSecretKey(Buffer.from(jwtKey));
  }

  async signAccess(c: AccessClaims): Promise<string> {
    const nowS = Math.floor(this.clock.now() / 1000);
    return new SignJWT({ typ: 'access', sid: c.sessionId })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(c.userId)
      .setIssuer(ISSUER)
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + ACCESS_TOKEN_TTL_S)
      .setJti(randomUUID())
      .sign(this.signingKey);
  }

  /** Verified claims, or undefined for anything invalid (bad signature, expired, wrong type). */
  async verifyAccess(token: string): Promise<(AccessClaims & { expiresAtMs: number }) | undefined> {
    try {
      const { payload } = await jwtVerify(token, this.signingKey, {
        algorithms: ['HS256'],
        issuer: ISSUER,
        currentDate: new Date(this.clock.now()),
        requiredClaims: ['sub', 'exp', 'sid', 'jti'],
      });
      if (payload.typ !== 'access' || typeof payload.sid !== 'string' || typeof payload.sub !== 'string') return undefined;
      return { userId: payload.sub, sessionId: payload.sid, expiresAtMs: payload.exp! * 1000 };
    } catch {
      return undefined;
    }
  }

  newRefreshToken(): string {
    return REFRESH_PREFIX + randomBytes(32).toString('base64url');
  }

  newApiKey(): string {
    return API_KEY_PREFIX + randomBytes(32).toString('base64url');
  }

  /** 6 digits, uniform. */
  newOtpCode(): string {
    return String(randomInt(0, 1_000_000)).padStart(6, '0');
  }

  otpHash(userId: string, code: string): string {
    return createHmac('sha256', this.otpKey).update(`${userId}:${code}`).digest('hex');
  }

  otpMatches(userId: string, code: string, storedHex: string): boolean {
    const a = Buffer.from(this.otpHash(userId, code), 'hex');
    const b = Buffer.from(storedHex, 'hex');
    return a.length === b.length && timingSafeEqual(a, b);
  }
}

export function sha256Hex(value: string): string {
  return createHash('sha256').update(value).digest('hex');
}

/** JWT shape: three base64url segments. Anything else is treated as an API key. */
export function looksLikeJwt(token: string): boolean {
  return /^[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+$/.test(token);
}
