/**
 * "Is this a valid JSON Schema?" with ajv 8 (`strict: false`: unknown keywords such as
 * `description` extensions are fine, but a malformed schema, e.g. `type: 12`, is not).
 * Ajv caches compiled schemas by object identity, so each checked schema is removed again: the
 * cache would otherwise grow with every request.
 */
import { Ajv } from 'ajv';
import addFormatsModule from 'ajv-formats';
import { invalid } from '../../../shared/errors.js';

export const MAX_SCHEMA_BYTES = 64 * 1024;

// ajv-formats ships CommonJS with a default export; under NodeNext the callable is `.default`.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv) => Ajv;

let shared: Ajv | undefined;
function ajv(): Ajv {
  if (!shared) shared = addFormats(new Ajv({ strict: false, allErrors: false, validateSchema: true }));
  return shared;
}

/** Throws 400 naming `field` unless `schema` compiles as a JSON Schema. */
export function checkJsonSchema(field: string, schema: Record<string, unknown>): void {
  if (JSON.stringify(schema).length > MAX_SCHEMA_BYTES) throw invalid(field, `must be at most ${MAX_SCHEMA_BYTES} bytes of JSON`);
  const a = ajv();
  try {
    a.compile(schema);
  } catch (e) {
    throw invalid(field, `is not a valid JSON Schema: ${(e as Error).message.slice(0, 300)}`);
  } finally {
    try {
      a.removeSchema(schema);
    } catch {
      // never added (compile failed before caching)
    }
  }
}
