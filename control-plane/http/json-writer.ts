/**
 * The proto3 JSON of a REST handler's output in one pass (issue 13: serialisation was ~10 % of a
 * conversations list request's CPU).
 *
 * Handlers return init-shaped plain objects. The library path is `create()` (a message built from
 * them) then `toJson()` (a JSON object built from the message), and every `google.protobuf.Struct`
 * field (JSON in, JSON out) is converted to a Struct message and back on the way. This writer reads
 * the init shape directly and produces the same JSON object: keys in field-number order, proto field
 * names, implicit fields always emitted (their zero value when null or absent), explicit ones only
 * when set (or as null for the records in NULL_WHEN_UNSET), lists and maps as arrays and objects, doubles' NaN/Infinity as strings, Struct values as
 * they are. `test/unit/http/json-writer.test.ts` checks it against the library on every response
 * message of the API, with random and edge values.
 *
 * Anything it does not handle the way the library would (a value of the wrong type, a message
 * instance inside a plain object where it cannot vouch for the shape, a Struct holding a value that
 * is not plain JSON) makes it answer `undefined`, and the caller takes the library path, which also
 * raises the library's errors. Message types with enums, oneofs, 64-bit or bytes fields, or other
 * well-known types (none in the API today), or that contain themselves (SystemHealthRecord's
 * `processes`), are never compiled: always the library path.
 */
import { create, toJson, ScalarType, type DescField, type DescMessage, type JsonObject, type JsonValue } from '@bufbuild/protobuf';

/** How the REST API writes JSON (snake_case keys, zero values present). */
export const JSON_WRITE = { useProtoFieldName: true, alwaysEmitImplicit: true } as const;

/** The JSON object of one init-shaped value, or `undefined`: use the library path. */
type Writer = (value: Record<string, unknown>) => JsonObject | undefined;

/** A field's JSON value, or NOT_PLAIN: give up on the whole message. */
type FieldWriter = (value: unknown) => JsonValue | typeof NOT_PLAIN | typeof OMIT;

const NOT_PLAIN = Symbol('not plain');
const OMIT = Symbol('omit');
const IMPLICIT = 2;
const STRUCT = 'google.protobuf.Struct';

const writers = new WeakMap<DescMessage, Writer | null>();

/**
 * The records the spec lists field by field (a conversation, its messages, its tool calls) and the
 * billing ledger entry: an optional field or a message field without a value is written as `null`
 * rather than left out, so a client reading `message["asr_latency_ms"]` of a typed turn, or
 * `entry["usage"]` of a top-up, gets null, not a missing key. Other types keep proto3 JSON's
 * omission (gRPC and Connect always do).
 */
export const NULL_WHEN_UNSET: ReadonlySet<string> = new Set(['voiceplane.v1.Conversation', 'voiceplane.v1.ConversationMessage', 'voiceplane.v1.ToolCallRecord', 'voiceplane.v1.LedgerEntry']);
/**
 * Single fields the spec lists unconditionally on records whose other optional fields are
 * conditional ("only on a day with a shift"): written as null when unset, the rest left out.
 */
export const NULL_FIELDS_WHEN_UNSET: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['voiceplane.v1.AttendanceRow', new Set(['first_login', 'last_logout'])],
  ['voiceplane.v1.SystemHealthRecord', new Set(['avg_response_ms'])],
]);

/**
 * Fields of NULL_WHEN_UNSET records the spec has present only in some rows ("present only on
 * folded multi-segment rows of transferred calls"): left out when unset, so a key present means it applies.
 */
export const ABSENT_WHEN_UNSET: ReadonlyMap<string, ReadonlySet<string>> = new Map([
  ['voiceplane.v1.Conversation', new Set(['call_id', 'session_count', 'segment_count', 'segment_pattern'])],
]);

/** Whether an unset `f` of `desc` is written as null (NULL_WHEN_UNSET, NULL_FIELDS_WHEN_UNSET, ABSENT_WHEN_UNSET). */
function unsetIsNull(desc: DescMessage, f: DescField): boolean {
  if (!((f.fieldKind === 'scalar' && f.presence !== IMPLICIT) || f.fieldKind === 'message')) return false;
  if (ABSENT_WHEN_UNSET.get(desc.typeName)?.has(f.name)) return false;
  return NULL_WHEN_UNSET.has(desc.typeName) || (NULL_FIELDS_WHEN_UNSET.get(desc.typeName)?.has(f.name) ?? false);
}

/** The proto3 JSON object of `value` (a handler's output for `desc`), as the library writes it (plus NULL_WHEN_UNSET). */
export function writeJson(desc: DescMessage, value: object): JsonObject {
  const fast = writerFor(desc);
  if (fast && !hasTypeName(value)) {
    const json = fast(value as Record<string, unknown>);
    if (json !== undefined) return json;
  }
  return withNulls(desc, toJson(desc, create(desc, value as never), JSON_WRITE) as JsonObject);
}

/** The library's JSON of `desc` with NULL_WHEN_UNSET applied at every depth (what the compiled writer writes). */
export function withNulls(desc: DescMessage, json: JsonObject): JsonObject {
  // Well-known types (Value, Struct, ...) have JSON forms of their own: left as the library wrote them.
  if (desc.typeName.startsWith('google.protobuf.') || typeof json !== 'object' || json === null || Array.isArray(json)) return json;
  const out: JsonObject = {};
  for (const f of [...desc.fields].sort((a, b) => a.number - b.number)) {
    const v = json[f.name];
    if (v === undefined) {
      if (unsetIsNull(desc, f)) out[f.name] = null;
      continue;
    }
    if (f.fieldKind === 'message') out[f.name] = withNulls(f.message, v as JsonObject);
    else if (f.fieldKind === 'list' && f.listKind === 'message') out[f.name] = (v as JsonObject[]).map((x) => withNulls(f.message, x));
    else out[f.name] = v;
  }
  return out;
}

/** The compiled writer of `desc`, or null when its shape is not one this module handles. */
export function writerFor(desc: DescMessage): Writer | null {
  let w = writers.get(desc);
  if (w === undefined) {
    writers.set(desc, null); // recursive types (SystemHealthRecord): the library path
    w = compile(desc);
    writers.set(desc, w);
  }
  return w;
}

function compile(desc: DescMessage): Writer | null {
  if (desc.typeName.startsWith('google.protobuf.') || desc.oneofs.length > 0) return null;
  const fields = [...desc.fields].sort((a, b) => a.number - b.number);
  const keys: string[] = [];
  const locals: string[] = [];
  const writes: FieldWriter[] = [];
  for (const f of fields) {
    if (f.name === '__proto__') return null;
    const write = fieldWriter(f, unsetIsNull(desc, f));
    if (!write) return null;
    keys.push(f.name);
    locals.push(f.localName);
    writes.push(write);
  }
  return (value) => {
    const json: JsonObject = {};
    for (let i = 0; i < writes.length; i++) {
      const out = writes[i]!(value[locals[i]!]);
      if (out === NOT_PLAIN) return undefined;
      if (out !== OMIT) json[keys[i]!] = out;
    }
    return json;
  };
}

function fieldWriter(f: DescField, nullWhenUnset: boolean): FieldWriter | null {
  switch (f.fieldKind) {
    case 'scalar': {
      const scalar = scalarWriter(f.scalar);
      if (!scalar) return null;
      const unset = nullWhenUnset ? null : OMIT;
      if (f.presence !== IMPLICIT) return (v) => (v == null ? unset : scalar(v));
      const zero = scalar(zeroOf(f.scalar)) as JsonValue;
      return (v) => (v == null ? zero : scalar(v));
    }
    case 'message': {
      const unset = nullWhenUnset ? null : OMIT;
      if (f.message.typeName === STRUCT) return (v) => (v == null ? unset : writeStruct(v));
      const inner = messageWriter(f.message);
      if (!inner) return null;
      return (v) => (v == null ? unset : inner(v));
    }
    case 'list': {
      let item: FieldWriter | null = null;
      if (f.listKind === 'scalar') item = scalarWriter(f.scalar);
      else if (f.listKind === 'message') item = f.message.typeName === STRUCT ? writeStruct : messageWriter(f.message);
      if (!item) return null;
      const write = item;
      return (v) => {
        if (v == null) return [];
        if (!Array.isArray(v)) return NOT_PLAIN;
        const out: JsonValue[] = new Array(v.length);
        for (let i = 0; i < v.length; i++) {
          // A null entry becomes an empty message in create(): rare enough for the library path.
          const x = v[i] == null ? NOT_PLAIN : write(v[i]);
          if (x === NOT_PLAIN || x === OMIT) return NOT_PLAIN;
          out[i] = x;
        }
        return out;
      };
    }
    case 'map': {
      if (f.mapKind !== 'scalar') return null;
      const write = scalarWriter(f.scalar);
      if (!write) return null;
      return (v) => {
        if (v == null) return {};
        if (!isLiteralObject(v)) return NOT_PLAIN;
        const out: JsonObject = {};
        for (const k of Object.keys(v)) {
          if (k === '__proto__') return NOT_PLAIN;
          const x = write((v as Record<string, unknown>)[k]);
          if (x === NOT_PLAIN) return NOT_PLAIN;
          out[k] = x;
        }
        return out;
      };
    }
    default:
      return null; // enums
  }
}

/**
 * A nested message: a plain init object goes through its compiled writer; a message instance
 * (a handler may hold one, e.g. a `google.protobuf.Value` made by `fromJson`) is the library's to
 * write, exactly as `toJson` of the parent would.
 */
function messageWriter(desc: DescMessage): FieldWriter | null {
  // Well-known types other than Struct are written by the library only (from message instances).
  const inner = desc.typeName.startsWith('google.protobuf.') ? undefined : writerFor(desc);
  if (inner === null) return null;
  return (v) => {
    if (typeof v !== 'object' || v === null) return NOT_PLAIN;
    if (hasTypeName(v)) return (v as { $typeName: string }).$typeName === desc.typeName ? withNulls(desc, toJson(desc, v as never, JSON_WRITE) as JsonObject) : NOT_PLAIN;
    return inner ? (inner(v as Record<string, unknown>) ?? NOT_PLAIN) : NOT_PLAIN;
  };
}

/** A Struct field (or list item) holds its JSON object: written as it is when it is plain JSON. */
function writeStruct(v: unknown): JsonObject | typeof NOT_PLAIN {
  return isLiteralObject(v) && isPlainJson(v) ? (v as JsonObject) : NOT_PLAIN;
}

type ScalarWriter = (v: unknown) => JsonValue | typeof NOT_PLAIN;

function scalarWriter(t: ScalarType): ScalarWriter | null {
  switch (t) {
    case ScalarType.STRING:
      return (v) => (typeof v === 'string' ? v : NOT_PLAIN);
    case ScalarType.BOOL:
      return (v) => (typeof v === 'boolean' ? v : NOT_PLAIN);
    case ScalarType.INT32:
    case ScalarType.SINT32:
    case ScalarType.SFIXED32:
    case ScalarType.UINT32:
    case ScalarType.FIXED32:
      return (v) => (typeof v === 'number' ? v : NOT_PLAIN);
    case ScalarType.DOUBLE:
    case ScalarType.FLOAT:
      return (v) => (typeof v !== 'number' ? NOT_PLAIN : Number.isNaN(v) ? 'NaN' : v === Infinity ? 'Infinity' : v === -Infinity ? '-Infinity' : v);
    default:
      return null; // 64-bit integers and bytes (none in the API)
  }
}

function zeroOf(t: ScalarType): unknown {
  return t === ScalarType.STRING ? '' : t === ScalarType.BOOL ? false : 0;
}

function hasTypeName(v: object): boolean {
  return (v as { $typeName?: unknown }).$typeName !== undefined;
}

/** An object literal (or null-prototype object): not an array, Date, Map or class instance. */
function isLiteralObject(v: unknown): v is Record<string, unknown> {
  if (typeof v !== 'object' || v === null || Array.isArray(v)) return false;
  const proto = Object.getPrototypeOf(v);
  return proto === Object.prototype || proto === null;
}

/** Bounded like the JSON it came from; a Struct deeper than this goes the library's way. */
const MAX_DEPTH = 64;

/** Whether a Struct value survives the library's Struct round trip unchanged. */
function isPlainJson(v: unknown, depth = 0): boolean {
  if (depth > MAX_DEPTH) return false;
  switch (typeof v) {
    case 'string':
    case 'boolean':
      return true;
    case 'number':
      return Number.isFinite(v);
    case 'object':
      if (v === null) return true;
      if (Array.isArray(v)) {
        for (let i = 0; i < v.length; i++) if (!isPlainJson(v[i], depth + 1)) return false;
        return true;
      }
      if (!isLiteralObject(v) || hasTypeName(v)) return false;
      for (const k in v) {
        if (!Object.prototype.hasOwnProperty.call(v, k) || k === '__proto__') return false;
        if (!isPlainJson(v[k], depth + 1)) return false;
      }
      return true;
    default:
      return false;
  }
}
