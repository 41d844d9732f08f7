/**
 * Workspace carrier accounts (issue 24): each carrier's credentials "set once per workspace in the
 * call-center settings" (`PUT /call-center/settings` `carriers`, served by the webhooks domain,
 * stored here in `workspace_carrier_accounts`). Fields are the adapter's `credentialFields`:
 * secrets encrypted (shared/secrets) and answered masked, the others as given. Agent bindings'
 * blank fields inherit them (context.ts `resolveAccount`); environment variables remain the
 * deployment-wide fallback.
 */
import type { JsonObject, JsonValue } from '@bufbuild/protobuf';
import { invalid } from '../../shared/errors.js';
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import type { SecretBox } from '../../shared/secrets.js';
import type { CarrierAccount, CarrierAdapters, CarrierName, CredentialField } from './carriers/index.js';

const MAX_FIELD_CHARS = 512;
/** A masked secret as answered on read: sending it back keeps the stored value. */
const MASK = '••••';

/** Per carrier: the fields to set (`null`: clear) or `null` to remove the whole account. */
export type CarrierAccountsPatch = Map<CarrierName, Map<string, string | null> | null>;

interface Row {
  carrier: string;
  fields: Record<string, string>;
  secrets_enc: string | null;
}

export interface CarrierAccounts {
  /** Validates `carriers` of a PUT (400 naming `carriers.<carrier>.<field>`); undefined: not given. */
  parse(v: JsonObject | undefined): CarrierAccountsPatch | undefined;
  /** Applies a patch in the caller's transaction. */
  save(tx: SqlOrTx, workspaceId: string, patch: CarrierAccountsPatch, now: Date): Promise<void>;
  /** The settings view: secret fields masked (`••••` + last 4 characters). */
  view(sql: SqlOrTx, workspaceId: string): Promise<JsonObject>;
  /** Decrypted accounts by carrier (those with both an account id and a secret, or extra fields only). */
  resolve(workspaceId: string, signal?: AbortSignal): Promise<Partial<Record<CarrierName, CarrierAccount>>>;
}

export function mask(secret: string): string {
  return secret.length > 8 ? `${MASK}${secret.slice(-4)}` : MASK;
}

export function createCarrierAccounts(deps: { sql: Sql; secrets: SecretBox; carriers: CarrierAdapters }): CarrierAccounts {
  const { sql, secrets, carriers } = deps;

  function fieldsOf(carrier: CarrierName): readonly CredentialField[] {
    return carriers.get(carrier)?.credentialFields ?? [];
  }

  async function rows(q: SqlOrTx, workspaceId: string): Promise<Row[]> {
    return q<Row[]>`select carrier, fields, secrets_enc from workspace_carrier_accounts where workspace_id = ${workspaceId} order by carrier`;
  }

  function decrypted(r: Row): Record<string, string> {
    let secret: Record<string, string> = {};
    if (r.secrets_enc) {
      try {
        secret = JSON.parse(secrets.decrypt(r.secrets_enc)) as Record<string, string>;
      } catch {
        secret = {};
      }
    }
    return { ...r.fields, ...secret };
  }

  return {
    parse(v) {
      if (v === undefined) return undefined;
      const patch: CarrierAccountsPatch = new Map();
      for (const [name, value] of Object.entries(v)) {
        const adapter = carriers.get(name as CarrierName);
        if (!adapter) throw invalid(`carriers.${name}`, `is not a carrier this deployment drives (${[...carriers.keys()].join(', ')})`);
        if (value === null) {
          patch.set(adapter.id, null);
          continue;
        }
        if (typeof value !== 'object' || Array.isArray(value)) throw invalid(`carriers.${name}`, 'must be an object of credential fields, or null to remove the account');
        const fields = new Map<string, string | null>();
        for (const [field, raw] of Object.entries(value as Record<string, JsonValue>)) {
          const def = adapter.credentialFields.find((f) => f.name === field);
          const path = `carriers.${name}.${field}`;
          if (!def) throw invalid(path, `is not a ${adapter.displayName} field (${adapter.credentialFields.map((f) => f.name).join(', ')})`);
          if (raw === null || raw === '') {
            fields.set(field, null);
            continue;
          }
          if (typeof raw !== 'string') throw invalid(path, 'must be a string');
          const text = raw.trim();
          // A masked secret sent back unchanged (a form that round-trips the GET) keeps the stored one.
          if (def.secret && text.startsWith(MASK)) continue;
          const max = def.maxChars ?? MAX_FIELD_CHARS;
          if (text.length > max) throw invalid(path, `must be at most ${max} characters`);
          if (/[\u0000-\u001f]/.test(text)) throw invalid(path, 'must not contain control characters');
          if (def.pattern && !def.pattern.test(text)) throw invalid(path, `is not a valid ${adapter.displayName} ${field}`);
          fields.set(field, text);
        }
        patch.set(adapter.id, fields);
      }
      return patch;
    },

    async save(tx, workspaceId, patch, now) {
      for (const [carrier, fields] of patch) {
        if (fields === null) {
          await tx`delete from workspace_carrier_accounts where workspace_id = ${workspaceId} and carrier = ${carrier}`;
          continue;
        }
        const [cur] = await tx<Row[]>`select carrier, fields, secrets_enc from workspace_carrier_accounts where workspace_id = ${workspaceId} and carrier = ${carrier} for update`;
        const merged = cur ? decrypted(cur) : {};
        for (const [k, v] of fields) {
          if (v === null) delete merged[k];
          else merged[k] = v;
        }
        const plain: Record<string, string> = {};
        const secret: Record<string, string> = {};
        for (const def of fieldsOf(carrier)) {
          const v = merged[def.name];
          if (v !== undefined) (def.secret ? secret : plain)[def.name] = v;
        }
        if (Object.keys(plain).length === 0 && Object.keys(secret).length === 0) {
          await tx`delete from workspace_carrier_accounts where workspace_id = ${workspaceId} and carrier = ${carrier}`;
          continue;
        }
        const enc = Object.keys(secret).length ? secrets.encrypt(JSON.stringify(secret)) : null;
        await tx`
          insert into workspace_carrier_accounts (workspace_id, carrier, fields, secrets_enc, updated_at)
          values (${workspaceId}, ${carrier}, ${tx.json(plain)}, ${enc}, ${now})
          on conflict (workspace_id, carrier) do update set fields = excluded.fields, secrets_enc = excluded.secrets_enc, updated_at = excluded.updated_at`;
      }
    },

    async view(q, workspaceId) {
      const out: JsonObject = {};
      for (const r of await rows(q, workspaceId)) {
        const all = decrypted(r);
        const shown: JsonObject = {};
        for (const def of fieldsOf(r.carrier as CarrierName)) {
          const v = all[def.name];
          if (v !== undefined) shown[def.name] = def.secret ? mask(v) : v;
        }
        out[r.carrier] = shown;
      }
      return out;
    },

    async resolve(workspaceId) {
      const out: Partial<Record<CarrierName, CarrierAccount>> = {};
      for (const r of await rows(sql, workspaceId)) {
        const carrier = r.carrier as CarrierName;
        if (!carriers.has(carrier)) continue;
        const { account_sid = '', auth_token = '', ...extra } = decrypted(r);
        out[carrier] = { carrier, accountSid: account_sid, authToken: auth_token, extra };
      }
      return out;
    },
  };
}
