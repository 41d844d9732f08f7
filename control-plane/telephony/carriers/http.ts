/**
 * The carrier REST request every adapter sends (our own calls to a carrier's API base: fixed, or
 * configured by the operator, or a workspace's SignalWire space, which must be a
 * `*.signalwire.com` host, so shared/outbound does not apply). Timeout per request, the
 * caller's abort never cuts a request that may already have placed a call, errors as CarrierError
 * (status 0: unreachable, a 503 for the API caller, or, with `outcomeUnknown`, no answer to a
 * request the carrier may have acted on; otherwise the carrier's status and message).
 */
import { readBodyCapped } from '../../../shared/outbound/index.js';
import { CarrierError } from './types.js';

/** Carrier API answers are small JSON documents; a larger one is refused, not buffered. */
export const MAX_CARRIER_RESPONSE_BYTES = 1024 * 1024;

export interface CarrierRequest {
  method?: 'POST' | 'GET' | 'PUT' | 'DELETE';
  url: string;
  auth: { basic: [string, string] } | { bearer: string };
  /** Form (URLSearchParams) or JSON body. */
  body?: URLSearchParams | Record<string, unknown>;
  timeoutMs?: number;
}

/** Sends the request; the parsed JSON body of a 2xx (or `{}`). */
export async function carrierRequest(r: CarrierRequest): Promise<Record<string, unknown>> {
  const headers: Record<string, string> = { accept: 'application/json', authorization: authorization(r.auth) };
  let body: string | undefined;
  if (r.body instanceof URLSearchParams) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = r.body.toString();
  } else if (r.body) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(r.body);
  }
  let res: Response;
  const timeout = AbortSignal.timeout(r.timeoutMs ?? 10_000);
  try {
    res = await fetch(r.url, { method: r.method ?? 'POST', headers, body, signal: timeout });
  } catch (err) {
    if (neverSent(err) && !timeout.aborted) throw new CarrierError(0, `carrier unreachable: ${(err as Error).message}`);
    const unknown = new CarrierError(0, timeout.aborted ? `the carrier did not answer within ${r.timeoutMs ?? 10_000} ms` : `the carrier connection failed mid-request: ${(err as Error).message}`);
    unknown.outcomeUnknown = true;
    throw unknown;
  }
  let text = '';
  try {
    text = (await readBodyCapped(res, MAX_CARRIER_RESPONSE_BYTES)).toString('utf8');
  } catch (err) {
    if (res.ok) throw new CarrierError(502, `carrier answer unreadable: ${(err as Error).message}`);
  }
  let json: Record<string, unknown> = {};
  try {
    const v: unknown = text ? JSON.parse(text) : {};
    if (v && typeof v === 'object' && !Array.isArray(v)) json = v as Record<string, unknown>;
  } catch {
    // not JSON: keep the status
  }
  if (!res.ok) {
    // Twilio-style {code, message}; Telnyx-style {errors: [{code, title, detail}]}.
    const errs = Array.isArray(json.errors) ? (json.errors[0] as Record<string, unknown> | undefined) : undefined;
    const message = str(json.message) || str(errs?.detail) || str(errs?.title) || str(json.error_message) || `carrier answered ${res.status}`;
    const code = Number(json.code ?? errs?.code);
    throw new CarrierError(res.status, message, Number.isFinite(code) && code > 0 ? code : undefined, str(json.more_info) || undefined);
  }
  return json;
}

/**
 * Failures that happen before a request can reach the carrier: no address, no connection, no TLS.
 * Anything else (a timeout, a reset after the request was written) may have been acted on.
 */
const NOT_SENT_CODES = new Set(['ENOTFOUND', 'EAI_AGAIN', 'ECONNREFUSED', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT', 'ERR_TLS_CERT_ALTNAME_INVALID', 'CERT_HAS_EXPIRED', 'DEPTH_ZERO_SELF_SIGNED_CERT', 'UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'SELF_SIGNED_CERT_IN_CHAIN']);

function neverSent(err: unknown): boolean {
  const cause = (err as { cause?: { code?: unknown } } | undefined)?.cause;
  return typeof cause?.code === 'string' && NOT_SENT_CODES.has(cause.code);
}

/** The `Authorization` header value of carrier credentials (also for recording downloads). */
export function authorization(auth: CarrierRequest['auth']): string {
  return 'basic' in auth ? `Basic ${Buffer.from(`${auth.basic[0]}:${auth.basic[1]}`).toString('base64')}` : `Bearer ${auth.bearer}`;
}

function str(v: unknown): string {
  return typeof v === 'string' ? v : '';
}

/** A configured base URL without its trailing slashes. */
export function trimBase(url: string): string {
  return url.replace(/\/+$/, '');
}

/** A URL's origin, '' when it is not a URL (a misconfigured base matches nothing). */
export function originOf(url: string): string {
  try {
    return new URL(url).origin;
  } catch {
    return '';
  }
}
