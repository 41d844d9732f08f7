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
import { createHash, createHmac, randomUUID, timingSafeEqual } from 'node:crypto';
import { importPKCS8, SignJWT } from 'jose';

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
 * received. `applicationId`, when known, must match the token's. Synchronous (HMAC-SHA256 with
 * node:crypto) so the adapters' `verifyWebhook` stays a plain check; only HS256 is accepted.
 */
export function verifyVonageCallback(opts: { secret: string; authorization: string | null | undefined; rawBody: string; applicationId?: string; nowMs?: number }): CallbackVerdict {
  if (!opts.secret) return { ok: false, reason: 'no signature secret' };
  const m = /^Bearer\s+([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)\.([A-Za-z0-9_-]+)$/.exec(opts.authorization?.trim() ?? '');
  if (!m || opts.authorization!.length > 8192) return { ok: false, reason: 'no bearer token' };
  const [, h, p, sig] = m as unknown as [string, string, string, string];
  let header: Record<string, unknown>;
  let payload: Record<string, unknown>;
  try {
    header = JSON.parse(Buffer.from(h, 'base64url').toString('utf8')) as Record<string, unknown>;
    payload = JSON.parse(Buffer.from(p, 'base64url').toString('utf8')) as Record<string, unknown>;
  } catch {
    return { ok: false, reason: 'token: not JSON' };
  }
  if (typeof header !== 'object' || header === null || header.alg !== 'HS256') return { ok: false, reason: 'token: not HS256' };
  const want = createHmac('sha256', opts.secret).update(`${h}.${p}`).digest();
  const got = Buffer.from(sig, 'base64url');
  if (want.length !== got.length || !timingSafeEqual(want, got)) return { ok: false, reason: 'token: bad signature' };
  if (typeof payload !== 'object' || payload === null) return { ok: false, reason: 'token: no claims' };
  const nowS = Math.floor((opts.nowMs ?? Date.now()) / 1000);
  if (typeof payload.iat !== 'number' || Math.abs(nowS - payload.iat) > CALLBACK_MAX_AGE_S) return { ok: false, reason: 'token too old' };
  if (typeof payload.exp === 'number' && payload.exp + CALLBACK_MAX_AGE_S < nowS) return { ok: false, reason: 'token expired' };
  if (opts.applicationId && payload.application_id !== undefined && payload.application_id !== opts.applicationId) return { ok: false, reason: 'another application' };
  // Without the hash a valid token could be replayed with any body.
  if (typeof payload.payload_hash !== 'string') return { ok: false, reason: 'no payload_hash' };
  const bodyHash = Buffer.from(createHash('sha256').update(opts.rawBody, 'utf8').digest('hex'), 'utf8');
  const claimed = Buffer.from(payload.payload_hash.toLowerCase(), 'utf8');
  if (bodyHash.length !== claimed.length || !timingSafeEqual(bodyHash, claimed)) return { ok: false, reason: 'body does not match payload_hash' };
  return { ok: true };
}
