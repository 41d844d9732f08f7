/**
 * Edge checks of connector input: pasted credentials against the catalog's `credential_fields`
 * (required, bounded, `pattern`) and action bodies against the action's compiled `parameters`.
 * Messages name the field; a credential VALUE never appears in one.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type { ValidateFunction } from 'ajv';
import { invalid } from '../errors.js';
import type { ProviderEntry } from './catalog.js';
import type { Credential } from './providers/types.js';

const MAX_CREDENTIAL_CHARS = 2000;
/** An action body is what a model or a client fills in: small. */
export const MAX_ACTION_BODY_BYTES = 64 * 1024;

export function checkCredentials(entry: ProviderEntry, body: JsonObject | undefined): Credential {
  const out: Record<string, string> = {};
  for (const f of entry.credential_fields) {
    const v = body?.[f.key];
    if (v === undefined || v === null || (typeof v === 'string' && v.trim() === '')) throw invalid(f.key, `is required (${f.label})`);
    if (typeof v !== 'string') throw invalid(f.key, 'must be a string');
    const value = v.trim();
    if (value.length > MAX_CREDENTIAL_CHARS) throw invalid(f.key, `must be at most ${MAX_CREDENTIAL_CHARS} characters`);
    if (f.pattern && !new RegExp(f.pattern, 'u').test(value)) throw invalid(f.key, `is not in the expected form: ${f.pattern_help ?? f.pattern}`);
    out[f.key] = value;
  }
  return out;
}

export function checkActionBody(validate: ValidateFunction, body: JsonObject | undefined): Record<string, unknown> {
  const value = body ?? {};
  if (JSON.stringify(value).length > MAX_ACTION_BODY_BYTES) throw invalid('body', `must be at most ${MAX_ACTION_BODY_BYTES} bytes of JSON`);
  if (validate(value)) return value;
  const e = validate.errors?.[0];
  const missing = e?.keyword === 'required' ? (e.params as { missingProperty?: string }).missingProperty : undefined;
  const extra = e?.keyword === 'additionalProperties' ? (e.params as { additionalProperty?: string }).additionalProperty : undefined;
  const path = (e?.instancePath ?? '').replace(/^\//, '').replace(/\//g, '.');
  const field = missing ?? extra ?? (path || 'body');
  const problem = missing ? 'is required' : extra ? 'is not a parameter of this action' : (e?.message ?? 'is invalid');
  throw invalid(field, problem);
}
