/**
 * ApiKeyService: user API keys (`vpk_` + 32 random bytes, base64url). Only the SHA-256 of a key is
 * stored; the raw key is returned once, by create. Revocation reaches every replica within 5 s
 * (see auth.ts for the cache bound).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { ApiKeyService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { AppError, conflict, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { ControlPlaneDeps } from '../domain.js';
import type { Principal } from '../http/auth.js';
import { ALL_SCOPES, isKnownScope, missingScopes, SCOPES } from '../http/scopes.js';
import type { AccountsAuth } from './auth.js';
import { sha256Hex, type TokenService } from './tokens.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { iso, pathId, required } from '../http/validate.js';

/** Active keys per user: enforced by the database (migration 0004); documented here. */
export const MAX_KEYS_PER_USER = 100;
export const MAX_SCOPES = 32;
const SCOPE_RE = /^[a-z0-9_.*-]{1,64}(:[a-z0-9_.*-]{1,64})?$/;
/** Characters of the raw key kept for display (`vpk_` + 6). */
const DISPLAY_PREFIX_CHARS = 10;

interface KeyRow {
  id: string;
  name: string;
  prefix: string;
  scopes: string[];
  created_at: Date;
  last_used_at: Date | null;
}

const keyJson = (k: KeyRow) => ({
  apiKey: k.id,
  name: k.name,
  prefix: k.prefix,
  scopes: k.scopes,
  createdAt: iso(k.created_at),
  lastUsedAt: k.last_used_at ? iso(k.last_used_at) : undefined,
});

/** Trimmed, de-duplicated, every entry a known scope (http/scopes.ts) or `*`; else 400 naming `scopes`. */
export function validScopes(scopes: string[]): string[] {
  if (scopes.length > MAX_SCOPES) throw invalid('scopes', `at most ${MAX_SCOPES} scopes`);
  const out = new Set<string>();
  for (const s of scopes) {
    const v = s.trim();
    if (!SCOPE_RE.test(v)) throw invalid('scopes', `"${v.slice(0, 64)}" is not a scope (e.g. agents:read)`);
    if (!isKnownScope(v)) throw invalid('scopes', `unknown scope "${v}"; known: ${SCOPES.join(', ')}, *`);
    out.add(v);
  }
  return [...out];
}

/**
 * A key may only create keys whose scopes are a subset of its own: otherwise a narrow key could
 * mint a broader one (`[]` is unscoped). JWT sessions are not scope-limited.
 */
function requireSubset(p: Principal, requested: string[]): void {
  if (p.via !== 'api_key') return;
  const missing = missingScopes(p.scopes, requested);
  if (missing.length === 0) return;
  const what = missing.includes(ALL_SCOPES) ? 'an unscoped key (every scope)' : missing.join(', ');
  throw new AppError('FORBIDDEN', `this API key cannot create a key with scopes it lacks: ${what}`, {
    details: missing.map((s) => ({ field: 'scopes', problem: `missing ${s}` })),
  });
}

export function createApiKeyService(deps: ControlPlaneDeps, auth: AccountsAuth, tokens: TokenService): ServiceImpl<typeof ApiKeyService> {
  const { sql } = deps;
  return {
    async createApiKey(req, ctx) {
      const p = await auth.principal(ctx);
      const name = required('name', req.name, 100);
      const scopes = validScopes(req.scopes);
      requireSubset(p, scopes);
      const raw = tokens.newApiKey();
      // MAX_KEYS_PER_USER is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
      const [row] = await sql<KeyRow[]>`
        insert into api_keys (id, user_id, name, prefix, key_hash, scopes)
        values (${newId()}, ${p.userId}, ${name}, ${raw.slice(0, DISPLAY_PREFIX_CHARS)}, ${sha256Hex(raw)}, ${scopes})
        returning id, name, prefix, scopes, created_at, last_used_at`;
      return { ...keyJson(row), key: raw };
    },

    async listApiKeys(req, ctx) {
      const p = await auth.principal(ctx);
      const pg = pageOf(req);
      const rows = await sql<KeyRow[]>`
        select id, name, prefix, scopes, created_at, last_used_at from api_keys
        where user_id = ${p.userId} and revoked_at is null
        order by created_at desc, id desc limit ${pg.limit} offset ${pg.offset}`;
      const [{ n }] = await sql<{ n: number }[]>`
        select count(*)::int as n from api_keys where user_id = ${p.userId} and revoked_at is null`;
      return { apiKeys: rows.map(keyJson), meta: pageMeta(pg, n) };
    },

    async revokeApiKey(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('api key', req.id);
      const [k] = await sql<{ key_hash: string; is_org_key: boolean }[]>`
        select key_hash, is_org_key from api_keys where id = ${id} and user_id = ${p.userId} and revoked_at is null`;
      if (!k) throw notFound('api key');
      if (k.is_org_key) throw conflict('the organization key is managed by ORG_API_KEY; change the setting to rotate it');
      await sql`update api_keys set revoked_at = ${new Date(deps.clock.now())} where id = ${id} and revoked_at is null`;
      await auth.forgetKey(k.key_hash);
      return { message: 'revoked' };
    },
  };
}
