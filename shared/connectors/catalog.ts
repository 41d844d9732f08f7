/**
 * Loads and checks the catalog data (catalog-data.ts) once at start-up. A catalog that does not
 * match CATALOG_SCHEMA, or an action whose `parameters` is not a compilable JSON Schema, throws
 * CatalogError naming the path: a bad catalog must stop the process, never half-serve.
 * Each action's `parameters` is compiled once here and reused by every execute call.
 */
import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv';
import addFormatsModule from 'ajv-formats';

const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

export type AuthKind = 'api_key' | 'oauth';

export interface CredentialField {
  key: string;
  label: string;
  secret: boolean;
  help: string;
  pattern?: string;
  pattern_help?: string;
}

export interface CatalogAction {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
  product: string;
}

export interface ProviderEntry {
  id: string;
  name: string;
  description: string;
  auth_kinds: AuthKind[];
  credential_fields: CredentialField[];
  products: string[];
  actions: CatalogAction[];
}

export interface Catalog {
  version: number;
  providers: ProviderEntry[];
  /** By id or name, case-insensitively (spec: the name is accepted wherever the id is). */
  find(idOrName: string): ProviderEntry | undefined;
  /** Compiled `parameters` of `<provider>.<action>`. */
  validator(providerId: string, action: string): ValidateFunction | undefined;
}

export class CatalogError extends Error {
  override name = 'CatalogError';
}

const PRODUCTS = ['crm', 'scheduling', 'helpdesk', 'messaging', 'payments', 'issues', 'itsm', 'calendar', 'mail', 'sheets'];
const ID = '^[a-z0-9_]{1,40}$';

const CATALOG_SCHEMA = {
  type: 'object',
  required: ['version', 'providers'],
  additionalProperties: false,
  properties: {
    version: { type: 'integer', minimum: 1 },
    providers: {
      type: 'array',
      minItems: 1,
      maxItems: 200,
      items: {
        type: 'object',
        required: ['id', 'name', 'description', 'auth_kinds', 'credential_fields', 'products', 'actions'],
        additionalProperties: false,
        properties: {
          id: { type: 'string', pattern: ID },
          name: { type: 'string', minLength: 1, maxLength: 100 },
          description: { type: 'string', maxLength: 500 },
          auth_kinds: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: ['api_key', 'oauth'] } },
          credential_fields: {
            type: 'array',
            maxItems: 10,
            items: {
              type: 'object',
              required: ['key', 'label', 'secret', 'help'],
              additionalProperties: false,
              properties: {
                key: { type: 'string', pattern: ID },
                label: { type: 'string', minLength: 1 },
                secret: { type: 'boolean' },
                help: { type: 'string' },
                pattern: { type: 'string', minLength: 1 },
                pattern_help: { type: 'string', minLength: 1 },
              },
            },
          },
          products: { type: 'array', minItems: 1, uniqueItems: true, items: { enum: PRODUCTS } },
          actions: {
            type: 'array',
            minItems: 1,
            maxItems: 50,
            items: {
              type: 'object',
              required: ['name', 'description', 'parameters', 'product'],
              additionalProperties: false,
              properties: {
                name: { type: 'string', pattern: ID },
                description: { type: 'string', minLength: 1, maxLength: 500 },
                parameters: { type: 'object', required: ['type'], properties: { type: { const: 'object' } } },
                product: { enum: PRODUCTS },
              },
            },
          },
        },
      },
    },
  },
};

export function newAjv(): Ajv {
  return addFormats(new Ajv({ strict: false, allErrors: false }));
}

export function loadCatalog(data: unknown): Catalog {
  const ajv = newAjv();
  const check = ajv.compile(CATALOG_SCHEMA);
  if (!check(data)) throw new CatalogError(`connector catalog is invalid: ${describe(check.errors)}`);
  const { version, providers } = data as { version: number; providers: ProviderEntry[] };
  const byKey = new Map<string, ProviderEntry>();
  const validators = new Map<string, ValidateFunction>();
  for (const [i, p] of providers.entries()) {
    const at = `/providers/${i} (${p.id})`;
    for (const key of [p.id, p.name.toLowerCase()]) {
      if (byKey.has(key) && byKey.get(key) !== p) throw new CatalogError(`connector catalog is invalid: ${at}: id or name "${key}" is used twice`);
      byKey.set(key, p);
    }
    const needsKey = p.auth_kinds.includes('api_key');
    if (needsKey !== p.credential_fields.length > 0) throw new CatalogError(`connector catalog is invalid: ${at}: credential_fields must be listed exactly when auth_kinds has api_key`);
    for (const f of p.credential_fields) {
      if (f.pattern === undefined) continue;
      try {
        new RegExp(f.pattern, 'u');
      } catch (e) {
        throw new CatalogError(`connector catalog is invalid: ${at}/credential_fields/${f.key}/pattern: ${(e as Error).message}`);
      }
    }
    const names = new Set<string>();
    for (const a of p.actions) {
      if (names.has(a.name)) throw new CatalogError(`connector catalog is invalid: ${at}/actions/${a.name}: listed twice`);
      names.add(a.name);
      if (!p.products.includes(a.product)) throw new CatalogError(`connector catalog is invalid: ${at}/actions/${a.name}: product ${a.product} is not one of the provider's products`);
      try {
        validators.set(`${p.id}.${a.name}`, ajv.compile(a.parameters));
      } catch (e) {
        throw new CatalogError(`connector catalog is invalid: ${at}/actions/${a.name}/parameters: ${(e as Error).message}`);
      }
    }
  }
  return {
    version,
    providers,
    find: (idOrName) => byKey.get(idOrName.trim().toLowerCase()),
    validator: (providerId, action) => validators.get(`${providerId}.${action}`),
  };
}

/** `/providers/2/actions/0/name: must match pattern ...` (first error; ajv allErrors is off). */
export function describe(errors: ErrorObject[] | null | undefined): string {
  const e = errors?.[0];
  if (!e) return 'unknown problem';
  const extra = e.keyword === 'additionalProperties' ? ` (${String((e.params as { additionalProperty?: string }).additionalProperty)})` : '';
  return `${e.instancePath || '/'}: ${e.message ?? e.keyword}${extra}`;
}
