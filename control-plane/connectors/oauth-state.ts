/**
 * The OAuth `state`: `<payload b64url>.<HMAC-SHA256 b64url>` over workspace, user, provider,
 * products, nonce and expiry (key derived from the JWT key, so it needs no extra secret), plus a
 * row per nonce (migration 0014) holding the sealed PKCE verifier. The callback checks the
 * signature (tampered), the expiry (expired) and deletes the row (a second use finds nothing:
 * replayed), in that order.
 */
import { createHash, createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import type { Sql } from '../../shared/db/client.js';

/** Consent must finish within this. */
export const STATE_TTL_MS = 10 * 60_000;
/** Pending consents kept per workspace: older ones are dropped (their callback answers `replayed`). */
export const MAX_PENDING_PER_WORKSPACE = 20;
/** Longest `state` accepted by the callback (ours are ~250 characters). */
const MAX_STATE_CHARS = 2048;

export interface StatePayload {
  workspaceId: string;
  userId: string;
  providerId: string;
  products: string[];
  nonce: string;
  /** Epoch ms. */
  expiresAt: number;
}

export type StateProblem = 'missing' | 'tampered' | 'expired' | 'replayed';

export function stateKey(jwtKey: Uint8Array): Buffer {
  return createHmac('sha256', Buffer.from(jwtKey)).update('voiceplane connector oauth state v1').digest();
}

export function signState(key: Buffer, p: StatePayload): string {
  const body = Buffer.from(JSON.stringify({ w: p.workspaceId, u: p.userId, p: p.providerId, pr: p.products, n: p.nonce, e: p.expiresAt }), 'utf8').toString('base64url');
  return `${body}.${createHmac('sha256', key).update(body).digest('base64url')}`;
}

/** The payload of a state this deployment signed, or why not. Expiry is checked by the caller. */
export function readState(key: Buffer, state: string): StatePayload | 'missing' | 'tampered' {
  if (!state) return 'missing';
  if (state.length > MAX_STATE_CHARS) return 'tampered';
  const [body, sig, extra] = state.split('.');
  if (!body || !sig || extra !== undefined) return 'tampered';
  const want = createHmac('sha256', key).update(body).digest();
  const got = Buffer.from(sig, 'base64url');
  if (got.length !== want.length || !timingSafeEqual(got, want)) return 'tampered';
  try {
    const j = JSON.parse(Buffer.from(body, 'base64url').toString('utf8'));
    return { workspaceId: j.w, userId: j.u, providerId: j.p, products: j.pr, nonce: j.n, expiresAt: j.e };
  } catch {
    return 'tampered';
  }
}

export function newNonce(): string {
  return randomBytes(18).toString('base64url');
}

/** PKCE (RFC 7636): a 43-character verifier and its S256 challenge. */
export function pkcePair(): { verifier: string; challenge: string } {
  const verifier = randomBytes(32).toString('base64url');
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') };
}

/** Stores a pending consent, sweeping expired ones and keeping the workspace's newest few. */
export async function saveState(sql: Sql, p: StatePayload, verifierEnc: string | null, now: Date): Promise<void> {
  await sql.begin(async (tx) => {
    await tx`delete from connector_oauth_states where expires_at < ${now}`;
    await tx`
      insert into connector_oauth_states (nonce, workspace_id, user_id, provider_id, products, verifier_enc, expires_at, created_at)
      values (${p.nonce}, ${p.workspaceId}, ${p.userId}, ${p.providerId}, ${p.products}, ${verifierEnc}, ${new Date(p.expiresAt)}, ${now})`;
    await tx`
      delete from connector_oauth_states where workspace_id = ${p.workspaceId} and nonce not in (
        select nonce from connector_oauth_states where workspace_id = ${p.workspaceId} order by created_at desc, nonce limit ${MAX_PENDING_PER_WORKSPACE})`;
  });
}

/** Deletes and returns the pending consent (single use); undefined when already used or dropped. */
export async function takeState(sql: Sql, nonce: string): Promise<{ workspace_id: string; provider_id: string; verifier_enc: string | null } | undefined> {
  const [row] = await sql<Array<{ workspace_id: string; provider_id: string; verifier_enc: string | null }>>`
    delete from connector_oauth_states where nonce = ${nonce} returning workspace_id, provider_id, verifier_enc`;
  return row;
}
