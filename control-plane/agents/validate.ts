/**
 * Field checks for the agents domain. Pure; every failure is a 400 INVALID_REQUEST naming its
 * field (tests assert the code and the field, never the text). Ids that are not UUIDs cannot
 * exist, so they are 404 (never a Postgres cast error).
 */
import { invalid, notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';

export const MAX_NAME_CHARS = 200;
export const MAX_TEXT_CHARS = 100_000;
export const MAX_URL_CHARS = 2048;

export function requiredString(field: string, value: string | undefined, maxChars = MAX_NAME_CHARS): string {
  const v = (value ?? '').trim();
  if (!v) throw invalid(field, 'is required');
  if (v.length > maxChars) throw invalid(field, `must be at most ${maxChars} characters`);
  return v;
}

/** Optional free text: undefined stays undefined; a value is length-checked (not trimmed). */
export function optionalText(field: string, value: string | undefined, maxChars = MAX_TEXT_CHARS): string | undefined {
  if (value === undefined) return undefined;
  if (value.length > maxChars) throw invalid(field, `must be at most ${maxChars} characters`);
  return value;
}

export function oneOf<T extends string>(field: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined) return undefined;
  if (!(allowed as readonly string[]).includes(value)) throw invalid(field, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function intInRange(field: string, value: number | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < min || value > max) throw invalid(field, `must be an integer between ${min} and ${max}`);
  return value;
}

export function numberInRange(field: string, value: number | undefined, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isFinite(value) || value < min || value > max) throw invalid(field, `must be a number between ${min} and ${max}`);
  return value;
}

/** `""` is allowed (means "none"); anything else must be an absolute http(s) URL. */
export function httpUrl(field: string, value: string | undefined, opts: { required?: boolean } = {}): string | undefined {
  if (value === undefined) {
    if (opts.required) throw invalid(field, 'is required');
    return undefined;
  }
  const v = value.trim();
  if (v === '') {
    if (opts.required) throw invalid(field, 'is required');
    return '';
  }
  if (v.length > MAX_URL_CHARS) throw invalid(field, `must be at most ${MAX_URL_CHARS} characters`);
  let u: URL;
  try {
    u = new URL(v);
  } catch {
    throw invalid(field, 'must be an http or https URL');
  }
  if (u.protocol !== 'http:' && u.protocol !== 'https:') throw invalid(field, 'must be an http or https URL');
  return v;
}

/** Path and body ids: a non-UUID is a 404 for `what`. Lower-cased. */
export function idOf(what: string, value: string | undefined): string {
  if (!value || !isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
