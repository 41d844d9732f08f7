/**
 * Analysis schema fields: the request checks (400 naming the exact field, e.g. `fields[2].type`)
 * and the JSON Schema the extraction LLM is asked to fill. Pure.
 *
 * Every field is required but nullable in the JSON Schema: a call that never mentions a value must
 * be able to say so (null) rather than make one up, and OpenAI-style strict tools want every
 * property listed as required anyway.
 */
import { invalid } from '../../shared/errors.js';
import { longerThan } from '../http/validate.js';

export const FIELD_TYPES = ['string', 'number', 'boolean', 'enum', 'string[]'] as const;
export type FieldType = (typeof FIELD_TYPES)[number];

export interface AnalysisField {
  name: string;
  type: FieldType;
  description?: string;
  enum?: string[];
}

export const MAX_FIELDS = 50;
export const MAX_ENUM_VALUES = 50;
const MAX_DESCRIPTION_CHARS = 500;
const MAX_ENUM_VALUE_CHARS = 100;
/** A function parameter name every provider accepts (OpenAI: `^[a-zA-Z0-9_-]{1,64}$`). */
const NAME_RE = /^[A-Za-z_][A-Za-z0-9_]{0,63}$/;

/** Checks the `fields` JSON of a create or update and returns it normalised (trimmed, no extra keys). */
export function parseFields(value: unknown): AnalysisField[] {
  if (!Array.isArray(value)) throw invalid('fields', 'must be an array of {name, type, description?, enum?}');
  if (value.length === 0) throw invalid('fields', 'must list at least one field');
  if (value.length > MAX_FIELDS) throw invalid('fields', `must list at most ${MAX_FIELDS} fields`);
  const seen = new Set<string>();
  return value.map((raw, i) => {
    const at = `fields[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(at, 'must be an object {name, type, description?, enum?}');
    const f = raw as Record<string, unknown>;
    const name = typeof f.name === 'string' ? f.name.trim() : '';
    if (!NAME_RE.test(name)) throw invalid(`${at}.name`, 'must be 1-64 letters, digits or _ and not start with a digit');
    // A JavaScript object's prototype slot: as a property name it never reaches the JSON Schema.
    if (name === '__proto__') throw invalid(`${at}.name`, '"__proto__" is reserved: choose another name');
    // Case-insensitive: `Reason` and `reason` would be one column to a reader of the insights.
    if (seen.has(name.toLowerCase())) throw invalid(`${at}.name`, `duplicates the field name "${name}"`);
    seen.add(name.toLowerCase());
    const type = f.type;
    if (typeof type !== 'string' || !(FIELD_TYPES as readonly string[]).includes(type)) throw invalid(`${at}.type`, `must be one of ${FIELD_TYPES.join(', ')}`);
    const out: AnalysisField = { name, type: type as FieldType };
    if (f.description !== undefined && f.description !== null) {
      if (typeof f.description !== 'string') throw invalid(`${at}.description`, 'must be a string');
      if (longerThan(f.description, MAX_DESCRIPTION_CHARS)) throw invalid(`${at}.description`, `must be at most ${MAX_DESCRIPTION_CHARS} characters`);
      if (f.description.trim()) out.description = f.description.trim();
    }
    // An empty list on a non-enum field is harmless (clients that always send the key).
    const hasEnum = Array.isArray(f.enum) ? f.enum.length > 0 : f.enum !== undefined && f.enum !== null;
    if (type === 'enum') out.enum = parseEnum(`${at}.enum`, f.enum);
    else if (hasEnum) throw invalid(`${at}.enum`, 'is only allowed on fields of type enum');
    return out;
  });
}

function parseEnum(at: string, value: unknown): string[] {
  if (!Array.isArray(value) || value.length === 0) throw invalid(at, 'must list the allowed values of an enum field');
  if (value.length > MAX_ENUM_VALUES) throw invalid(at, `must list at most ${MAX_ENUM_VALUES} values`);
  const seen = new Set<string>();
  return value.map((v, j) => {
    if (typeof v !== 'string' || !v.trim()) throw invalid(`${at}[${j}]`, 'must be a non-empty string');
    const s = v.trim();
    if (longerThan(s, MAX_ENUM_VALUE_CHARS)) throw invalid(`${at}[${j}]`, `must be at most ${MAX_ENUM_VALUE_CHARS} characters`);
    if (seen.has(s)) throw invalid(`${at}[${j}]`, `duplicates the value "${s}"`);
    seen.add(s);
    return s;
  });
}

/** The JSON Schema of one extraction: an object with every field, each nullable. */
export function jsonSchemaOf(fields: AnalysisField[]): Record<string, unknown> {
  const properties = Object.fromEntries(
    fields.map((f) => {
      const p: Record<string, unknown> = propertyOf(f);
      if (f.description) p.description = f.description;
      return [f.name, p];
    }),
  );
  return { type: 'object', properties, required: fields.map((f) => f.name), additionalProperties: false };
}

function propertyOf(f: AnalysisField): Record<string, unknown> {
  switch (f.type) {
    case 'string':
      return { type: ['string', 'null'] };
    case 'number':
      return { type: ['number', 'null'] };
    case 'boolean':
      return { type: ['boolean', 'null'] };
    case 'enum':
      return { type: ['string', 'null'], enum: [...(f.enum ?? []), null] };
    case 'string[]':
      return { type: ['array', 'null'], items: { type: 'string' } };
  }
}
