/**
 * The JSON types of a REST request body, checked against its proto message before decoding, so a
 * wrong type is a 400 naming the full field path (`graph.nodes[0].label`, `scopes[1]`).
 *
 * The protobuf JSON decoder names only the message and the leaf field ("cannot decode field
 * voiceplane.v1.FlowNode.label"), reports a non-object Struct without any field, and follows the
 * proto3 JSON mapping where REST clients expect JSON types: a number field takes a string too
 * (`"5"`, and through `Number()` also `"0x10"` or `"1e-1"`). Our REST bodies are plain JSON: a
 * number is a JSON number (64-bit integers may also be decimal strings, as proto3 JSON writes them),
 * a string a string, a boolean a boolean. Nulls mean "not sent" at any depth (PATCH rules), as the
 * decoder treats them.
 */
import { ScalarType, type DescField, type DescMessage } from '@bufbuild/protobuf';
import { invalid } from '../../shared/errors.js';
import { isPlainObject } from './validate.js';
import { checkString } from './input.js';

const STRUCT = 'google.protobuf.Struct';
const VALUE = 'google.protobuf.Value';
const LIST_VALUE = 'google.protobuf.ListValue';
const INT64_TEXT = /^-?\d{1,20}$/;

/** Throws 400 (INVALID_REQUEST) naming the first field of `obj` whose JSON type does not fit `desc`. */
export function checkBodyShape(desc: DescMessage, obj: Record<string, unknown>, prefix = ''): void {
  for (const field of desc.fields) {
    const value = field.name in obj ? obj[field.name] : obj[field.jsonName];
    if (value === undefined || value === null) continue;
    checkField(field, value, prefix ? `${prefix}.${field.name}` : field.name);
  }
}

function checkField(field: DescField, value: unknown, path: string): void {
  switch (field.fieldKind) {
    case 'scalar':
      return checkScalar(field.scalar, value, path);
    case 'enum':
      if (typeof value !== 'string' && typeof value !== 'number') throw invalid(path, 'must be a string');
      return;
    case 'message':
      return checkMessage(field.message, value, path);
    case 'list': {
      if (!Array.isArray(value)) throw invalid(path, 'must be an array');
      for (let i = 0; i < value.length; i++) {
        const item: unknown = value[i];
        const at = `${path}[${i}]`;
        if (field.listKind === 'message') {
          if (item === null) throw invalid(at, 'must be an object');
          checkMessage(field.message, item, at);
        } else if (field.listKind === 'scalar') {
          if (item === null) throw invalid(at, expected(field.scalar));
          checkScalar(field.scalar, item, at);
        } else if (typeof item !== 'string' && typeof item !== 'number') {
          throw invalid(at, 'must be a string');
        }
      }
      return;
    }
    case 'map': {
      if (!isPlainObject(value)) throw invalid(path, 'must be an object');
      for (const [k, v] of Object.entries(value)) {
        if (v === null) continue;
        const at = `${path}.${k}`;
        if (field.mapKind === 'scalar') checkScalar(field.scalar, v, at);
        else if (field.mapKind === 'message') checkMessage(field.message, v, at);
        else if (typeof v !== 'string' && typeof v !== 'number') throw invalid(at, 'must be a string');
      }
      return;
    }
  }
}

function checkMessage(desc: DescMessage, value: unknown, path: string): void {
  if (desc.typeName === VALUE) return checkFreeJson(value, path, 0); // any JSON
  if (desc.typeName === LIST_VALUE) {
    if (!Array.isArray(value)) throw invalid(path, 'must be an array');
    return checkFreeJson(value, path, 0);
  }
  if (!isPlainObject(value)) throw invalid(path, 'must be an object');
  if (desc.typeName === STRUCT) return checkFreeJson(value, path, 0);
  // Other well-known types (none in request bodies today) keep their own JSON forms.
  if (desc.typeName.startsWith('google.protobuf.')) return;
  checkBodyShape(desc, value, path);
}

function checkScalar(type: ScalarType, value: unknown, path: string): void {
  switch (type) {
    case ScalarType.STRING:
      if (typeof value !== 'string') throw invalid(path, 'must be a string');
      // The decoder refuses a lone surrogate as "the wrong type"; say what is wrong, and where.
      checkString(value, path);
      return;
    case ScalarType.BYTES:
      if (typeof value !== 'string') throw invalid(path, 'must be a string');
      return;
    case ScalarType.BOOL:
      if (typeof value !== 'boolean') throw invalid(path, 'must be true or false');
      return;
    case ScalarType.INT64:
    case ScalarType.UINT64:
    case ScalarType.SINT64:
    case ScalarType.FIXED64:
    case ScalarType.SFIXED64:
      if (typeof value !== 'number' && !(typeof value === 'string' && INT64_TEXT.test(value))) throw invalid(path, 'must be an integer');
      return;
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      if (typeof value !== 'number') throw invalid(path, 'must be a number');
      if (!Number.isFinite(value)) throw invalid(path, 'must be a finite number');
      return;
    default:
      if (typeof value !== 'number') throw invalid(path, 'must be an integer');
  }
}

function expected(type: ScalarType): string {
  if (type === ScalarType.STRING || type === ScalarType.BYTES) return 'must be a string';
  if (type === ScalarType.BOOL) return 'must be true or false';
  if (type === ScalarType.DOUBLE || type === ScalarType.FLOAT) return 'must be a number';
  return 'must be an integer';
}

/** Deeper than this, the decoder's own nesting bound answers (rest.ts decodeInput). */
const FREE_JSON_MAX_DEPTH = 64;

/**
 * Free-form JSON (Struct, Value, ListValue) can hold anything but a number past a double
 * (`1e309` parses to Infinity, which protobuf's Value cannot carry): named by its full path
 * (`criteria[0].weight`), where the decoder would name only the top field.
 */
function checkFreeJson(value: unknown, path: string, depth: number): void {
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(path, 'is out of range');
    return;
  }
  if (value === null || typeof value !== 'object' || depth >= FREE_JSON_MAX_DEPTH) return;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) checkFreeJson(value[i], `${path}[${i}]`, depth + 1);
    return;
  }
  for (const [k, v] of Object.entries(value)) checkFreeJson(v, `${path}.${k}`, depth + 1);
}
