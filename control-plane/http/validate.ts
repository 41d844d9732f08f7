/**
 * Request field checks for every domain (accounts, agents, conversations, providers, ...). Pure;
 * every failure is a 400 INVALID_REQUEST naming its field, except ids that are not UUIDs: those
 * cannot exist, so they are 404 NOT_FOUND (never a Postgres cast error). Tests assert the code and
 * the field, never the text. Lists: `pageOf` / `pageMeta` in ./pagination.ts.
 */
import { invalid, notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import { isoOf } from '../../shared/iso-time.js';
import { assertTenantUrl, HTTP_PROTOCOLS, type OutboundPolicy } from '../../shared/outbound/index.js';

/** Names, labels and other short single-line strings. */
export const MAX_NAME_CHARS = 200;
/** Free text (prompts, messages, descriptions). */
export const MAX_TEXT_CHARS = 100_000;
export const MAX_URL_CHARS = 2048;
export const MAX_PERSON_NAME_CHARS = 100;
export const MIN_PASSWORD_CHARS = 8;
export const MAX_PASSWORD_CHARS = 256;
export const MAX_EMAIL_CHARS = 254;

/**
 * Whether `value` has more than `maxChars` characters, counted as code points (what a person counts,
 * and Postgres's char_length): an emoji is one character, not two UTF-16 units. Every length limit
 * on text a person writes uses it, so names, prompts and passwords count alike. No allocation; a
 * string no longer than the limit in UTF-16 units is within it without counting.
 */
export function longerThan(value: string, maxChars: number): boolean {
  if (value.length <= maxChars) return false;
  let chars = 0;
  for (let i = 0; i < value.length; i++) {
    const unit = value.charCodeAt(i);
    // A low surrogate after a high one is the second half of one character.
    if (unit >= 0xdc00 && unit <= 0xdfff && i > 0) {
      const prev = value.charCodeAt(i - 1);
      if (prev >= 0xd800 && prev <= 0xdbff) continue;
    }
    if (++chars > maxChars) return true;
  }
  return false;
}

/** Trimmed, non-empty, at most `maxChars`. */
export function required(field: string, value: string | undefined, maxChars = MAX_NAME_CHARS): string {
  const v = (value ?? '').trim();
  if (!v) throw invalid(field, 'is required');
  if (longerThan(v, maxChars)) throw invalid(field, `must be at most ${maxChars} characters`);
  return v;
}

/** Optional on update: undefined stays undefined, present must be non-empty (trimmed). */
export function optionalNonEmpty(field: string, value: string | undefined, maxChars = MAX_NAME_CHARS): string | undefined {
  return value === undefined ? undefined : required(field, value, maxChars);
}

/** Optional free text: undefined stays undefined; a value is length-checked (not trimmed). */
export function optionalText(field: string, value: string | undefined, maxChars = MAX_TEXT_CHARS): string | undefined {
  if (value === undefined) return undefined;
  if (longerThan(value, maxChars)) throw invalid(field, `must be at most ${maxChars} characters`);
  return value;
}

/** Trimmed; empty (proto3's "unset") is undefined unless `required`. Default max MAX_NAME_CHARS. */
export function text(field: string, value: string | undefined, opts: { required?: boolean; maxChars?: number } = {}): string | undefined {
  const v = value?.trim() ?? '';
  if (!v) {
    if (opts.required) throw invalid(field, 'is required');
    return undefined;
  }
  const max = opts.maxChars ?? MAX_NAME_CHARS;
  if (longerThan(v, max)) throw invalid(field, `must be at most ${max} characters`);
  return v;
}

/** undefined stays undefined; anything else (including '') must be one of `allowed`. */
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

export function nonNegativeInt(field: string, value: number | undefined): number | undefined {
  if (value === undefined) return undefined;
  if (!Number.isInteger(value) || value < 0) throw invalid(field, 'must be an integer of 0 or more');
  return value;
}

const EMAIL_RE = /^[^\s@]+@[^\s@]+\.[^\s@.]+$/;

/** Trimmed and lower-cased: emails are compared case-insensitively. */
export function email(field: string, value: string | undefined): string {
  const v = required(field, value, MAX_EMAIL_CHARS).toLowerCase();
  if (!EMAIL_RE.test(v)) throw invalid(field, 'must be an email address');
  return v;
}

/** Kept exactly as sent (spaces are characters of a password). */
export function password(field: string, value: string | undefined): string {
  const v = value ?? '';
  if (!v) throw invalid(field, 'is required');
  // Characters are code points: four emoji are four characters, not eight UTF-16 units.
  const chars = [...v].length;
  if (chars < MIN_PASSWORD_CHARS) throw invalid(field, `must be at least ${MIN_PASSWORD_CHARS} characters`);
  if (chars > MAX_PASSWORD_CHARS) throw invalid(field, `must be at most ${MAX_PASSWORD_CHARS} characters`);
  return v;
}

/** Path and body ids: a non-UUID is a 404 for `what`. Lower-cased. */
export function pathId(what: string, value: string | undefined): string {
  if (!value || !isUuid(value)) throw notFound(what);
  return value.toLowerCase();
}

/** A UUID in a body or query field (a reference, not the addressed resource): malformed is 400 naming the field. */
export function uuidField(field: string, value: string | undefined, isRequired = false): string | undefined {
  const v = (value ?? '').trim();
  if (!v) {
    if (isRequired) throw invalid(field, 'is required');
    return undefined;
  }
  if (!isUuid(v)) throw invalid(field, 'must be a UUID');
  return v.toLowerCase();
}

/** `""` is allowed (means "none"); anything else must be an absolute http(s) URL (or one of `protocols`). */
export function httpUrl(field: string, value: string | undefined, opts: { required?: boolean; protocols?: readonly string[] } = {}): string | undefined {
  if (value === undefined) {
    if (opts.required) throw invalid(field, 'is required');
    return undefined;
  }
  const protocols = opts.protocols ?? HTTP_PROTOCOLS;
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
    throw invalid(field, mustBe(protocols));
  }
  if (!protocols.includes(u.protocol)) throw invalid(field, mustBe(protocols));
  return v;
}

function mustBe(protocols: readonly string[]): string {
  return `must be an ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`;
}

/**
 * `httpUrl` for a URL the platform will call (tool endpoints, provider base_url, webhooks): also
 * refuses credentials in the URL, `localhost` and literal internal addresses in any spelling
 * (loopback, private, link-local, ...; shared/outbound), unless OUTBOUND_ALLOW_CIDRS lists them.
 * DNS names are not resolved here: the policy is enforced again at every connect.
 */
export function tenantUrl(field: string, value: string | undefined, policy: OutboundPolicy, opts: { required?: boolean; protocols?: readonly string[] } = {}): string | undefined {
  const v = httpUrl(field, value, opts);
  if (v) assertTenantUrl(v, field, policy, opts.protocols);
  return v;
}

/**
 * Whether two stored URLs ('' = the vendor's default address) reach the same origin (scheme, host,
 * port). A stored secret follows a URL edit only within one origin: a new path on the same server
 * keeps it, another host needs the secret sent again.
 */
export function sameOrigin(a: string, b: string): boolean {
  if (a === b) return true;
  if (!a || !b) return false;
  try {
    return new URL(a).origin === new URL(b).origin;
  } catch {
    return false;
  }
}

export function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** RFC 3339 with milliseconds in UTC (API conventions); '' for a missing timestamp. */
export const iso = isoOf;

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

/**
 * Years a date (`YYYY-MM-DD`) parameter may name. Queries run to the end of the last day, and a
 * bound past year 9999 is not a timestamp Postgres reads (`+010000-01-01T...`: a 500 before this
 * bound); records start in 1970 at the earliest.
 */
export const MIN_YEAR = 1970;
export const MAX_YEAR = 9998;
