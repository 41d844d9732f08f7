/** Request checks of the conversations domain: every failure names its field (400 INVALID_REQUEST). */
import { invalid, notFound } from '../../shared/errors.js';
import { pageMeta, pageOf, type Page } from '../http/pagination.js';
import { isUuid } from '../../shared/ids.js';

/** List `limit`: default 20, 1..500 (spec: "limit (default 20, max 500)"). */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 500;
export const MAX_TEXT_CHARS = 200;
/** A message's content (one turn's text). */
export const MAX_CONTENT_CHARS = 100_000;
export const STATUSES = ['active', 'completed', 'failed'] as const;
export type ConversationStatus = (typeof STATUSES)[number];
export const ROLES = ['user', 'assistant'] as const;
export const SEGMENT_KINDS = ['ai', 'human'] as const;

export type { Page };
export { pageMeta };

export function page(req: { limit?: number; offset?: number }): Page {
  return pageOf(req, MAX_LIMIT, DEFAULT_LIMIT);
}

/** Path ids: anything that is not a UUID cannot exist, so it is a 404 (never a cast error). */
export function pathId(what: string, value: string | undefined): string {
  if (!value || !isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** A UUID in a body or query field: malformed is 400 naming the field. */
export function uuidField(field: string, value: string | undefined, required = false): string | undefined {
  const v = (value ?? '').trim();
  if (!v) {
    if (required) throw invalid(field, 'is required');
    return undefined;
  }
  if (!isUuid(v)) throw invalid(field, 'must be a UUID');
  return v.toLowerCase();
}

export function text(field: string, value: string | undefined, opts: { required?: boolean; maxChars?: number } = {}): string | undefined {
  const v = value?.trim() ?? '';
  if (!v) {
    if (opts.required) throw invalid(field, 'is required');
    return undefined;
  }
  const max = opts.maxChars ?? MAX_TEXT_CHARS;
  if (v.length > max) throw invalid(field, `must be at most ${max} characters`);
  return v;
}

export function oneOf<T extends string>(field: string, value: string | undefined, allowed: readonly T[]): T | undefined {
  if (value === undefined || value === '') return undefined;
  if (!allowed.includes(value as T)) throw invalid(field, `must be one of ${allowed.join(', ')}`);
  return value as T;
}

export function nonNegativeInt(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0) throw invalid(field, 'must be an integer of 0 or more');
  return value;
}

/** Stable JSON for "same body" comparisons of idempotent creates (key order ignored). */
export function canonicalJson(v: unknown): string {
  if (v === null || typeof v !== 'object') return JSON.stringify(v ?? null);
  if (Array.isArray(v)) return `[${v.map(canonicalJson).join(',')}]`;
  const o = v as Record<string, unknown>;
  return `{${Object.keys(o)
    .filter((k) => o[k] !== undefined)
    .sort()
    .map((k) => `${JSON.stringify(k)}:${canonicalJson(o[k])}`)
    .join(',')}}`;
}
