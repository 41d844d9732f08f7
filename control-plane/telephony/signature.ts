/**
 * `X-Twilio-Signature` (docs/protocols.md section 3, as twilio-node computes it):
 * base64(HMAC-SHA1(authToken, url + for each param in sorted name order: name + value)).
 * Verification is constant-time and tries the URL as given, with the default port added and with
 * it removed, because Twilio is inconsistent about `:443` / `:80`.
 */
import { createHmac, timingSafeEqual } from 'node:crypto';

/** Form params as posted; a repeated key contributes each of its values (sorted, de-duplicated). */
export type SignedParams = Record<string, string | string[]>;

export function computeSignature(authToken: string, url: string, params: SignedParams = {}): string {
  let data = url;
  for (const name of Object.keys(params).sort()) {
    const v = params[name]!;
    const values = Array.isArray(v) ? [...new Set(v)].sort() : [v];
    for (const value of values) data += name + value;
  }
  return createHmac('sha1', authToken).update(data, 'utf8').digest('base64');
}

/** The URL as requested plus its variant with the default port toggled. */
export function urlVariants(url: string): string[] {
  let u: URL;
  try {
    u = new URL(url);
  } catch {
    return [url];
  }
  const defaultPort = u.protocol === 'https:' ? '443' : u.protocol === 'http:' ? '80' : '';
  if (!defaultPort) return [url];
  const auth = u.username ? `${u.username}${u.password ? `:${u.password}` : ''}@` : '';
  const rest = `${u.pathname}${u.search}${u.hash}`;
  const withPort = `${u.protocol}//${auth}${u.hostname}:${defaultPort}${rest}`;
  const withoutPort = `${u.protocol}//${auth}${u.hostname}${rest}`;
  // `new URL` drops a default port, so `u.port` is empty both when it was absent and when it was the default.
  const hadExplicitPort = /^[a-z]+:\/\/[^/]*:\d+/i.test(url);
  if (hadExplicitPort && u.port !== '') return [url];
  return [url, hadExplicitPort ? withoutPort : withPort];
}

export function verifySignature(authToken: string, url: string, params: SignedParams, signature: string | null | undefined): boolean {
  if (!signature || !authToken) return false;
  const given = Buffer.from(signature, 'utf8');
  let ok = false;
  for (const candidate of urlVariants(url)) {
    const expected = Buffer.from(computeSignature(authToken, candidate, params), 'utf8');
    // Constant time per candidate; every candidate is checked so timing does not tell which matched.
    if (expected.length === given.length && timingSafeEqual(expected, given)) ok = true;
  }
  return ok;
}
