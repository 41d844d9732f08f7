/**
 * Vonage's two JWTs (docs/telephony.md "Vonage"):
 *
 * - **Application JWT** (our requests to the Voice API): RS256 with the application's private key,
 *   claims `application_id`, `iat`, `exp`, `jti`. Tokens are cached per application for most of
 *   their 15 minute life (signing RSA per request would cost ~1 ms of CPU).
 * - **Signed callbacks** (Vonage's requests to us): `Authorization: Bearer <jwt>`, HS256 with the
 *   account's signature secret, claims `iat`, `jti`, `iss: "Vonage"`, `payload_hash` (SHA-256 hex of
 *   the raw body) and `api_key`/`application_id`. Verified: signature, algorithm, age (`iat` within
 *   5 minutes), the body hash, and the application when we know it.
 */
import { createHash, randomUUID, timingSafeEqual } from 'node:crypto';
import { importPKCS8, jwtVerify, SignJWT } from 'jose';

export interface VonageApp {
  applicationId: string;
  /** PEM (PKCS#8) private key of the application. */
  privateKey: string;
}

const APP_TOKEN_TTL_S = 900;
/** Reused until this much of its life is left. */
const APP_TOKEN_RENEW_S = 120;
const MAX_CACHED_APPS = 1000;
/** A signed callback older (or newer) than this is refused: replay bound. */
export const CALLBACK_MAX_AGE_S = 300;

const cache = new Map<string, { token: string; expS: number }>();

/** An application JWT for the Voice API (cached per application and key). */
export async function appJwt(app: VonageApp, nowMs = Date.now()): Promise<string> {
  const key = `${app.applicationId}:${createHash('sha256').update(app.privateKey).digest('base64url')}`;
  const nowS = Math.floor(nowMs / 1000);
  const hit = cache.get(key);
  if (hit && hit.expS - nowS > APP_TOKEN_RENEW_S) return hit.token;
  const pk = await importPKCS8(app.privateKey, 'RS256');
  const token = await new SignJWT({ application_id: app.applicationId })
    .setProtectedHeader({ alg: 'RS256', typ: 'JWT' })
    .setIssuedAt(nowS)
    .setExpirationTime(nowS + APP_TOKEN_TTL_S)
    .setJti(randomUUID())
    .sign(pk);
  if (cache.size >= MAX_CACHED_APPS) cache.delete(cache.keys().next().value as string);
  cache.set(key, { token, expS: nowS + APP_TOKEN_TTL_S });
  return token;
}

export type CallbackVerdict = { ok: true } | { ok: false; reason: string };

/**
 * Verifies a signed callback: `authorization` is the request's header, `rawBody` its bytes as
 * received. `applicationId`, when known, must match the token's.
 */
export async function verifyVonageCallback(opts: { secret: string; authorization: string | null | undefined; rawBody: string; applicationId?: string; nowMs?: number }): Promise<CallbackVerdict> {
  const m = /^Bearer\s+([A-Za-z0-9_-]+\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]+)$/.exec(opts.authorization?.trim() ?? '');
  if (!opts.secret) return { ok: false, reason: 'no signature secret' };
  if (!m || m[1]!.length > 8192) return { ok: false, reason: 'no bearer token' };
  let payload: Record<string, unknown>;
  try {
    ({ payload } = await jwtVerify(m[1]!, new TextEncoder().encode(opts.secret), {
      algorithms: ['HS256'],
      currentDate: new Date(opts.nowMs ?? Date.now()),
      clockTolerance: CALLBACK_MAX_AGE_S,
    }));
  } catch (err) {
    return { ok: false, reason: `token: ${(err as Error).message}` };
  }
  const nowS = Math.floor((opts.nowMs ?? Date.now()) / 1000);
  if (typeof payload.iat !== 'number' || Math.abs(nowS - payload.iat) > CALLBACK_MAX_AGE_S) return { ok: false, reason: 'token too old' };
  if (opts.applicationId && payload.application_id !== undefined && payload.application_id !== opts.applicationId) return { ok: false, reason: 'another application' };
  // Without the hash a valid token could be replayed with any body.
  if (typeof payload.payload_hash !== 'string') return { ok: false, reason: 'no payload_hash' };
  const want = Buffer.from(createHash('sha256').update(opts.rawBody, 'utf8').digest('hex'), 'utf8');
  const got = Buffer.from(payload.payload_hash.toLowerCase(), 'utf8');
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'body does not match payload_hash' };
  return { ok: true };
}
