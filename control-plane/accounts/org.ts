/**
 * ORG_API_KEY seeding. The organization owner is a real user row (`is_org_owner`, no usable
 * password, an address that cannot be registered) with one "Organization" workspace; the key is an
 * api_keys row (`is_org_key`) keyed by its SHA-256, so seeding is idempotent across restarts and
 * replicas (advisory lock). A changed key revokes the old one; an unset key revokes any org key;
 * a development key generated under DATA_DIR is seeded only when no org key is live.
 */
import type { Logger } from '../../shared/logger.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import { insertWorkspace } from './sql.js';
import { sha256Hex } from './tokens.js';

/** Arbitrary constant shared by every control plane (next to migrate.ts's 727_001). */
const ORG_SEED_LOCK_ID = 727_002;
/** No dot in the domain: fails the email check, so nobody can register it. */
export const ORG_OWNER_EMAIL = 'org-owner@voiceplane';

/**
 * Returns the SHA-256 of every key it revoked (other replicas may still have them cached).
 * `generated`: a development key made under DATA_DIR because ORG_API_KEY is unset. It never
 * replaces a live org key (one replica started without ORG_API_KEY on a shared database revoked
 * the key every other replica was configured with): it is seeded only when there is none.
 */
export async function seedOrgKey(sql: Sql, orgApiKey: string | undefined, logger: Logger, nowMs: number, generated = false): Promise<string[]> {
  const now = new Date(nowMs);
  return sql.begin(async (tx) => {
    await tx`select pg_advisory_xact_lock(${ORG_SEED_LOCK_ID})`;
    if (!orgApiKey) {
      const revoked = await tx<{ key_hash: string }[]>`update api_keys set revoked_at = ${now} where is_org_key and revoked_at is null returning key_hash`;
      if (revoked.length) logger.info('ORG_API_KEY unset: organization key revoked');
      return revoked.map((r) => r.key_hash);
    }
    let [owner] = await tx<{ id: string }[]>`select id from users where is_org_owner`;
    if (!owner) {
      [owner] = await tx<{ id: string }[]>`
        insert into users (id, email, password_hash, first_name, last_name, email_verified_at, is_org_owner)
        values (${newId()}, ${ORG_OWNER_EMAIL}, '!', 'Organization', 'Owner', ${now}, true)
        returning id`;
      await insertWorkspace(tx, owner.id, 'Organization');
    }
    const hash = sha256Hex(orgApiKey);
    if (generated) {
      const [live] = await tx<{ key_hash: string }[]>`select key_hash from api_keys where is_org_key and revoked_at is null`;
      if (live && live.key_hash !== hash) {
        logger.warn(
          'ORG_API_KEY unset here, but the database already has a live organization key (another replica\'s ORG_API_KEY, or an earlier development key): the key generated under DATA_DIR is not used; set ORG_API_KEY to the live key, or to a new value to replace it',
        );
        return [];
      }
    }
    const old = await tx<{ key_hash: string }[]>`
      update api_keys set revoked_at = ${now} where is_org_key and revoked_at is null and key_hash <> ${hash} returning key_hash`;
    if (old.length) logger.info('ORG_API_KEY changed: previous organization key revoked');
    await tx`
      insert into api_keys (id, user_id, name, prefix, key_hash, scopes, is_org_key)
      values (${newId()}, ${owner.id}, 'ORG_API_KEY', 'org', ${hash}, ${['*']}, true)
      on conflict (key_hash) do update set revoked_at = null, is_org_key = true, user_id = excluded.user_id`;
    return old.map((r) => r.key_hash);
  });
}
