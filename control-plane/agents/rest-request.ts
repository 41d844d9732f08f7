/**
 * REST request builder for this domain's routes: the framework's default (query, then body, then
 * path params; params win) plus a shape check of object-typed fields. The protobuf JSON decoder
 * reports a non-object sent for a `google.protobuf.Struct` field without naming the field
 * ("cannot decode message google.protobuf.Struct"), so we check those first and answer 400 naming
 * the field path (`connector_binding.actions[0].parameters`).
 */
import type { DescField, DescMessage } from '@bufbuild/protobuf';
import { AppError, invalid } from '../../shared/errors.js';
import { coerceQuery, type RestRequestParts } from '../http/rest.js';
import { isPlainObject } from '../http/validate.js';

const STRUCT = 'google.protobuf.Struct';
const VALUE = 'google.protobuf.Value';

export function restRequest(input: DescMessage): (parts: RestRequestParts) => unknown {
  return (parts) => {
    if (parts.body !== undefined && !isPlainObject(parts.body)) throw new AppError('INVALID_BODY', 'request body must be a JSON object');
    const body = (parts.body ?? {}) as Record<string, unknown>;
    checkShape(input, body, '');
    return { ...coerceQuery(input, parts.query), ...body, ...coerceQuery(input, parts.params) };
  };
}

/** Walks the message descriptor; throws 400 naming the first object/array field of the wrong kind. */
export function checkShape(desc: DescMessage, obj: Record<string, unknown>, prefix: string): void {
  for (const field of desc.fields) {
    const value = field.name in obj ? obj[field.name] : obj[field.jsonName];
    if (value === undefined || value === null) continue;
    const path = prefix ? `${prefix}.${field.name}` : field.name;
    checkField(field, value, path);
  }
}

function checkField(field: DescField, value: unknown, path: string): void {
  if (field.fieldKind === 'message') {
    checkMessage(field.message, value, path);
  } else if (field.fieldKind === 'list' && field.listKind === 'message') {
    if (!Array.isArray(value)) throw invalid(path, 'must be an array');
    value.forEach((item, i) => {
      if (item === null) throw invalid(`${path}[${i}]`, 'must be an object');
      checkMessage(field.message, item, `${path}[${i}]`);
    });
  } else if (field.fieldKind === 'list' && !Array.isArray(value)) {
    throw invalid(path, 'must be an array');
  }
}

function checkMessage(desc: DescMessage, value: unknown, path: string): void {
  if (desc.typeName === VALUE) return;
  if (!isPlainObject(value)) throw invalid(path, 'must be an object');
  if (desc.typeName === STRUCT) return;
  checkShape(desc, value, path);
}
