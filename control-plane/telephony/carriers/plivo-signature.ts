/**
 * `X-Plivo-Signature-V3` (Plivo's webhook signature, as plivo-node's `validateV3Signature`
 * computes it): base64(HMAC-SHA256(authToken, signingString + "." + nonce)), the nonce from
 * `X-Plivo-Signature-V3-Nonce`. The signing string of a POST is the URL without its query, then
 * "?" + the query parameters sorted ("k=v" joined by "&"), then "." if there was a query, then the
 * form parameters sorted by name as "k=v" with no separator (the "?" is there whenever the form is
 * not empty). A GET signs the URL with its sorted query. The header may hold several signatures
 * (one per auth token of the account), comma-separated: any match is valid.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

export type PlivoParams = Record<string, string | string[]>;

function sortedPairs(params: PlivoParams): Array<[string, string]> {
  const out: Array<[string, string]> = [];
  for (const k of Object.keys(params).sort()) {
    const v = params[k]!;
    for (const value of Array.isArray(v) ? [...v].sort() : [v]) out.push([k, value]);
  }
  return out;
}

/** The string Plivo signs for a request to `url` with `method` and form `params`. */
export function plivoSigningString(method: 'GET' | 'POST', url: string, params: PlivoParams = {}): string {
  const u = new URL(url);
  const base = `${u.protocol}//${u.host}${u.pathname}`;
  const query: PlivoParams = {};
  for (const [k, v] of u.searchParams) {
    const prev = query[k];
    query[k] = prev === undefined ? [v] : [...(Array.isArray(prev) ? prev : [prev]), v];
  }
  if (method === 'GET') for (const [k, v] of Object.entries(params)) query[k] = [...(Array.isArray(query[k]) ? (query[k] as string[]) : []), ...(Array.isArray(v) ? v : [v])];
  const q = sortedPairs(query)
    .map(([k, v]) => `${k}=${v}`)
    .join('&');
  const hasForm = method === 'POST' && Object.keys(params).length > 0;
  let s = base;
  if (q.length > 0 || hasForm) s += `?${q}`;
  if (q.length > 0 && hasForm) s += '.';
  if (hasForm) for (const [k, v] of sortedPairs(params)) s += `${k}=${v}`;
  return s;
}

export function computePlivoSignature(authToken: string, method: 'GET' | 'POST', url: string, params: PlivoParams, nonce: string): string {
  return createHmac('sha256', authToken).update(`${plivoSigningString(method, url, params)}.${nonce}`, 'utf8').digest('base64');
}

/** Constant-time check of the V3 header (comma-separated signatures: any one may match). */
export function verifyPlivoSignature(authToken: string, method: 'GET' | 'POST', url: string, params: PlivoParams, nonce: string | null | undefined, header: string | null | undefined): boolean {
  if (!authToken || !nonce || !header || header.length > 1024) return false;
  const expected = Buffer.from(computePlivoSignature(authToken, method, url, params, nonce), 'utf8');
  let ok = false;
  for (const s of header.split(',')) {
    const given = Buffer.from(s.trim(), 'utf8');
    if (given.length === expected.length && timingSafeEqual(given, expected)) ok = true;
  }
  return ok;
}
