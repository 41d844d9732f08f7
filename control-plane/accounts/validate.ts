/** Request checks shared by the account services: every failure names its field (400 INVALID_REQUEST). */
import { invalid, notFound } from '../../shared/errors.js';
import { pageMeta, pageOf, type Page } from '../http/pagination.js';
import { isUuid } from '../../shared/ids.js';

/** Lists: `limit` default 20, max 200; `offset` >= 0 (API conventions). Out of range: 400. */
export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;
export const MAX_NAME_CHARS = 200;
export const MAX_PERSON_NAME_CHARS = 100;
export const MIN_PASSWORD_CHARS = 8;
export const MAX_PASSWORD_CHARS = 256;
export const MAX_EMAIL_CHARS = 254;

export function required(field: string, value: string | undefined, maxChars = MAX_NAME_CHARS): string {
  const v = (value ?? '').trim();
  if (!v) throw invalid(field, 'is required');
  if (v.length > maxChars) throw invalid(field, `must be at most ${maxChars} characters`);
  return v;
}

/** Optional on update: undefined stays undefined, present must be non-empty. */
export function optionalNonEmpty(field: string, value: string | undefined, maxChars = MAX_NAME_CHARS): string | undefined {
  return value === undefined ? undefined : required(field, value, maxChars);
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/;

/** Trimmed and lower-cased: emails are compared case-insensitively. */
export function email(field: string, value: string | undefined): string {
  const v = required(field, value, MAX_EMAIL_CHARS).toLowerCase();
  if (!EMAIL_RE.test(v)) throw invalid(field, 'must be an email address');
  return v;
}

export function password(field: string, value: string | undefined): string {
  const v = value ?? '';
  if (!v) throw invalid(field, 'is required');
  if (v.length < MIN_PASSWORD_CHARS) throw invalid(field, `must be at least ${MIN_PASSWORD_CHARS} characters`);
  if (v.length > MAX_PASSWORD_CHARS) throw invalid(field, `must be at most ${MAX_PASSWORD_CHARS} characters`);
  return v;
}

/** Path ids: anything that is not a UUID cannot exist, so it is a 404 (never a Postgres cast error). */
export function pathId(what: string, value: string | undefined): string {
  if (!value || !isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

export type { Page };
export { pageMeta };

export function page(req: { limit?: number; offset?: number }): Page {
  return pageOf(req);
}

export function iso(d: Date | string | null | undefined): string {
  if (!d) return '';
  return (d instanceof Date ? d : new Date(d)).toISOString();
}
