/**
 * The one HTTP helper every adapter uses. Requests go through the platform's outbound client
 * (shared/outbound: the address policy, OUTBOUND_ALLOW_CIDRS), never a bare fetch, so a tenant-
 * supplied host (Zendesk subdomain, Jira site) can never reach an internal address. Vendor
 * answers are classified once here (VendorError.kind) so the service maps them to health and
 * HTTP status in one place, whatever the vendor.
 */
import { readBodyCapped, type OutboundClient } from '../../outbound/index.js';
import { AppError } from '../../errors.js';

/** Largest vendor response read (a search result page is far smaller). */
export const MAX_VENDOR_BODY_BYTES = 1024 * 1024;
const MAX_REASON_CHARS = 300;

/**
 * - `auth`: 401/403, the credential is refused or lacks a permission (health `reconnect_needed`).
 * - `not_found`: 404 (an unknown record, or on verify an unknown per-tenant host).
 * - `rejected`: another 4xx, the vendor refused this input (health unchanged).
 * - `rate_limited`: 429. `unavailable`: 5xx, timeout, connection failure (health `error`).
 */
export type VendorErrorKind = 'auth' | 'not_found' | 'rejected' | 'rate_limited' | 'unavailable';

export class VendorError extends Error {
  override name = 'VendorError';
  constructor(
    readonly kind: VendorErrorKind,
    /** The vendor's own words (its error message), already stripped of credential values. */
    readonly reason: string,
    readonly status?: number,
  ) {
    super(reason);
  }
}

export interface VendorRequest {
  method?: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  query?: Record<string, string | number | undefined>;
  /** JSON body. */
  json?: unknown;
  /** `application/x-www-form-urlencoded` body (Stripe). */
  form?: Record<string, string | number | undefined>;
  headers?: Record<string, string>;
  /** Name of one of the adapter's `extraBaseUrls` (a vendor with a second host, e.g. Twilio Lookups); default the main base URL. */
  base?: string;
}

export interface VendorHttp {
  request<T = any>(path: string, req?: VendorRequest): Promise<T>;
}

export interface VendorHttpOptions {
  outbound: OutboundClient;
  baseUrl: string;
  /** The adapter's other hosts by name, already resolved (overrides applied). */
  extraBaseUrls?: Readonly<Record<string, string>>;
  /** Sent on every request (Authorization, version headers). */
  headers: Record<string, string>;
  /** Credential values never echoed in a reason (a vendor may quote the key it refused). */
  secrets: string[];
  timeoutMs: number;
  signal?: AbortSignal;
}

export function vendorHttp(opts: VendorHttpOptions): VendorHttp {
  const base = opts.baseUrl.replace(/\/+$/, '');
  const scrub = (s: string) => opts.secrets.reduce((acc, v) => (v.length >= 4 ? acc.split(v).join('[redacted]') : acc), s).slice(0, MAX_REASON_CHARS);
  return {
    async request(path, req = {}) {
      const root = req.base === undefined ? base : opts.extraBaseUrls?.[req.base]?.replace(/\/+$/, '');
      if (root === undefined) throw new Error(`adapter asked for an undeclared base URL ${req.base}`);
      const url = new URL(root + path);
      for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined) url.searchParams.set(k, String(v));
      const headers: Record<string, string> = { accept: 'application/json', ...opts.headers, ...req.headers };
      let body: string | undefined;
      if (req.json !== undefined) {
        headers['content-type'] = 'application/json';
        body = JSON.stringify(req.json);
      } else if (req.form) {
        headers['content-type'] = 'application/x-www-form-urlencoded';
        const f = new URLSearchParams();
        for (const [k, v] of Object.entries(req.form)) if (v !== undefined) f.set(k, String(v));
        body = f.toString();
      }
      const timeout = AbortSignal.timeout(opts.timeoutMs);
      const signal = opts.signal ? AbortSignal.any([opts.signal, timeout]) : timeout;
      let res: Response;
      let raw: Buffer;
      try {
        res = await opts.outbound.fetch(url, { method: req.method ?? 'GET', headers, body, signal });
        raw = await readBodyCapped(res, MAX_VENDOR_BODY_BYTES);
      } catch (err) {
        // The address policy's refusal is the tenant's input (a host that resolves inside), not the vendor's health.
        if (err instanceof AppError && err.code === 'OUTBOUND_REFUSED') throw new VendorError('rejected', scrub(err.message));
        if (timeout.aborted) throw new VendorError('unavailable', `no answer within ${opts.timeoutMs} ms`);
        throw new VendorError('unavailable', scrub(`could not reach ${url.host}: ${(err as Error).message}`));
      }
      const text = raw.toString('utf8');
      let parsed: unknown;
      try {
        parsed = text ? JSON.parse(text) : null;
      } catch {
        parsed = undefined;
      }
      if (res.ok) {
        if (parsed === undefined) throw new VendorError('unavailable', `${url.host} answered ${res.status} with a body that is not JSON`, res.status);
        return parsed as any;
      }
      const reason = scrub(vendorReason(parsed) ?? `${url.host} answered ${res.status}`);
      throw new VendorError(kindOf(res.status), reason, res.status);
    },
  };
}

function kindOf(status: number): VendorErrorKind {
  if (status === 401 || status === 403) return 'auth';
  if (status === 404) return 'not_found';
  if (status === 429) return 'rate_limited';
  if (status >= 500) return 'unavailable';
  return 'rejected';
}

/** The message field of the vendors' error bodies (HubSpot, Stripe, Zendesk, Cal.com, Jira, ...). */
export function vendorReason(body: unknown): string | undefined {
  if (!body || typeof body !== 'object') return undefined;
  const b = body as Record<string, any>;
  // Freshdesk validation: `{description: "Validation failed", errors: [{field, message}]}` says which field only in `errors`.
  const fieldError = typeof b.description === 'string' && typeof b.errors?.[0]?.message === 'string' ? `${b.description}: ${b.errors[0].field ? `${b.errors[0].field}: ` : ''}${b.errors[0].message}` : undefined;
  const candidates = [fieldError, b.error?.message, b.message, b.error?.title, b.description, b.error_description, typeof b.error === 'string' ? b.error : undefined, b.errors?.[0]?.message, b.errors?.[0]?.detail, b.errorMessages?.[0], firstValue(b.errors)];
  const found = candidates.find((c) => typeof c === 'string' && c.trim() !== '');
  return found?.trim();
}

/** Jira's `{errors: {field: message}}`: the first field's message, named. */
function firstValue(errors: unknown): string | undefined {
  if (!errors || typeof errors !== 'object' || Array.isArray(errors)) return undefined;
  const [k, v] = Object.entries(errors)[0] ?? [];
  return typeof v === 'string' ? `${k}: ${v}` : undefined;
}
