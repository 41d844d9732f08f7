/**
 * Text Postgres cannot store, refused at the edge (issue 11, "NUL bytes -> 500"), and numbers
 * JSON cannot hold (a free-form JSON field's `1e309`, which parses as Infinity: jsonb and
 * `JSON.stringify` cannot write it).
 *
 * Postgres `text` cannot hold U+0000 (`invalid byte sequence for encoding "UTF8": 0x00`) and
 * `jsonb` refuses the `\u0000` escape and unpaired UTF-16 surrogates (`\ud800`, which
 * JSON.stringify writes for a lone surrogate). For `text`, postgres.js encodes a lone surrogate
 * as U+FFFD, silently changing the value. Either way the request used to end in a 500 or in
 * altered data, so one check runs on every decoded request message, REST (body, query string and
 * path parameters all land in the message) and Connect / gRPC alike, before any handler:
 * 400 INVALID_REQUEST naming the field by its JSON path (`metadata.note`, `scopes[2]`, `name`).
 *
 * The walk follows the message descriptor (field names as the API writes them, snake_case) and
 * walks free-form JSON (google.protobuf.Struct / Value) generically, object keys included.
 * Depth is bounded; the body size limit bounds the rest.
 */
import { toJson, type DescField, type DescMessage, type JsonValue } from '@bufbuild/protobuf';
import { invalid } from '../../shared/errors.js';
import { unstorableProblem } from '../../shared/unstorable.js';

/**
 * Deepest nesting walked (messages and JSON together); deeper requests are refused. 32, not more:
 * over gRPC each JSON level is three protobuf messages (Struct, its map entry, Value), and the
 * standard decoders (protobufjs under @grpc/grpc-js, protoc's runtimes) stop at 100 levels. At 64
 * a record saved over REST could not be read back over gRPC (GetAgent, ListAgents and
 * ListConversations answered INTERNAL "maximum nesting depth exceeded" for the whole list).
 */
export const MAX_INPUT_DEPTH = 32;


const NON_FINITE = 'must not hold a number beyond the range of a double (such as 1e309)';
const UNSET_VALUE = 'holds a google.protobuf.Value with no kind set: give null, a number, a string, a boolean, an object or a list';

const JSON_TYPES = new Set(['google.protobuf.Struct', 'google.protobuf.Value', 'google.protobuf.ListValue']);

/** Throws 400 naming the first field whose text Postgres cannot store. */
export function assertStorableText(desc: DescMessage, message: unknown): void {
  walkMessage(desc, message, '', 0);
}

export function isStorableText(s: string): boolean {
  return unstorableProblem(s) === undefined;
}

/** Throws 400 naming `path` when Postgres cannot store `s` (the REST body check runs it before decoding). */
export function checkString(s: string, path: string): void {
  const problem = unstorableProblem(s);
  if (problem) throw invalid(path || 'body', problem);
}

function deeper(path: string, depth: number): number {
  if (depth >= MAX_INPUT_DEPTH) throw invalid(path || 'body', `is nested more than ${MAX_INPUT_DEPTH} levels deep`);
  return depth + 1;
}

function join(path: string, name: string): string {
  return path ? `${path}.${name}` : name;
}

function walkMessage(desc: DescMessage, message: unknown, path: string, depth: number): void {
  if (message === null || typeof message !== 'object') return;
  const d = deeper(path, depth);
  if (JSON_TYPES.has(desc.typeName)) {
    // A Struct / Value message (not unwrapped to plain JSON): walk its JSON form. The decoder lets
    // a number past double range through (`1e309` parses as Infinity), which JSON cannot write back.
    let json: JsonValue;
    try {
      json = toJson(desc, message as never);
    } catch (err) {
      // The other thing JSON cannot write: a Value with no kind set (gRPC clients can send one).
      const unset = err instanceof Error && err.message.endsWith('must have a value');
      throw invalid(path || 'body', unset ? UNSET_VALUE : NON_FINITE);
    }
    walkJson(json, path, d);
    return;
  }
  const m = message as Record<string, unknown>;
  for (const f of desc.fields) {
    const value = fieldValue(f, m);
    if (value !== undefined) walkField(f, value, join(path, f.name), d);
  }
}

/** Oneof members live under the oneof's name as `{case, value}`. */
function fieldValue(f: DescField, m: Record<string, unknown>): unknown {
  if (!f.oneof) return m[f.localName];
  const o = m[f.oneof.localName] as { case?: string; value?: unknown } | undefined;
  return o?.case === f.localName ? o.value : undefined;
}

function walkField(f: DescField, value: unknown, path: string, depth: number): void {
  switch (f.fieldKind) {
    case 'scalar':
      if (typeof value === 'string') checkString(value, path);
      return;
    case 'enum':
      return;
    case 'message':
      walkSingular(f.message, value, path, depth);
      return;
    case 'list':
      if (!Array.isArray(value)) return;
      value.forEach((v, i) => {
        const at = `${path}[${i}]`;
        if (typeof v === 'string') checkString(v, at);
        else if (f.listKind === 'message') walkSingular(f.message, v, at, depth);
      });
      return;
    case 'map':
      if (!value || typeof value !== 'object') return;
      for (const [k, v] of Object.entries(value as Record<string, unknown>)) {
        checkString(k, path);
        const at = join(path, k);
        if (typeof v === 'string') checkString(v, at);
        else if (f.mapKind === 'message') walkSingular(f.message, v, at, depth);
      }
      return;
  }
}

/** A message-typed value: generated code unwraps Struct fields to plain JSON objects. */
function walkSingular(desc: DescMessage, value: unknown, path: string, depth: number): void {
  if (JSON_TYPES.has(desc.typeName) && !(value && typeof value === 'object' && '$typeName' in value)) {
    walkJson(value as JsonValue, path, depth);
    return;
  }
  walkMessage(desc, value, path, depth);
}

function walkJson(value: JsonValue | undefined, path: string, depth: number): void {
  if (typeof value === 'string') {
    checkString(value, path);
    return;
  }
  if (typeof value === 'number') {
    if (!Number.isFinite(value)) throw invalid(path || 'body', NON_FINITE);
    return;
  }
  if (value === null || typeof value !== 'object') return;
  const d = deeper(path, depth);
  if (Array.isArray(value)) {
    value.forEach((v, i) => walkJson(v, `${path}[${i}]`, d));
    return;
  }
  for (const [k, v] of Object.entries(value)) {
    // Keys are stored too (jsonb): a bad key is named by its parent.
    checkString(k, path);
    walkJson(v, join(path, k), d);
  }
}
