/**
 * ApiKeyService: user API keys (`vpk_` + 32 random bytes, base64url). Only the SHA-256 of a key is
 * stored; the raw key is returned once, by create. Revocation reaches every replica within 5 s
 * (see auth.ts for the cache bound).
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { ApiKeyService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { conflict, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { ControlPlaneDeps } from '../domain.js';
import type { AccountsAuth } from './auth.js';
import { sha256Hex, type TokenService } from './tokens.js';
import { iso, page, pageMeta, pathId, required } from './validate.js';

/** Active keys per user. */
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

export function validScopes(scopes: string[]): string[] {
  if (scopes.length > MAX_SCOPES) throw invalid('scopes', `at most ${MAX_SCOPES} scopes`);
  const out = new Set<string>();
  for (const s of scopes) {
    const v = s.trim();
    if (!SCOPE_RE.test(v)) throw invalid('scopes', `"${v.slice(0, 64)}" is not a scope (e.g. agents:read)`);
    out.add(v);
  }
  return [...out];
}

export function createApiKeyService(deps: ControlPlaneDeps, auth: AccountsAuth, tokens: TokenService): ServiceImpl<typeof ApiKeyService> {
  const { sql } = deps;
  return {
    async createApiKey(req, ctx) {
      const p = await auth.principal(ctx);
      const name = required('name', req.name, 100);
      const scopes = validScopes(req.scopes);
      const raw = tokens.newApiKey();
      const row = await sql.begin(async (tx) => {
        // Serialise creates per user so the cap holds under concurrency.
        await tx`select id from users where id = ${p.userId} for update`;
        const [{ n }] = await tx<{ n: number }[]>`
          select count(*)::int as n from api_keys where user_id = ${p.userId} and revoked_at is null`;
        if (n >= MAX_KEYS_PER_USER) throw conflict(`at most ${MAX_KEYS_PER_USER} active API keys per user; revoke one first`);
        const [k] = await tx<KeyRow[]>`
          insert into api_keys (id, user_id, name, prefix, key_hash, scopes)
          values (${newId()}, ${p.userId}, ${name}, ${raw.slice(0, DISPLAY_PREFIX_CHARS)}, ${sha256Hex(raw)}, ${scopes})
          returning id, name, prefix, scopes, created_at, last_used_at`;
        return k;
      });
      return { ...keyJson(row), key: raw };
    },

    async listApiKeys(req, ctx) {
      const p = await auth.principal(ctx);
      const pg = page(req);
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
      auth.forgetKey(k.key_hash);
      return { message: 'revoked' };
    },
  };
}
