/**
 * Vendors echo what they were sent: a 401 body such as "Incorrect API key provided: sk-…" carried
 * the tenant's key into the caller's socket events, the conversation record and the logs. Error
 * text from a vendor passes through here before it goes anywhere.
 */

const REDACTED = '[redacted]';
/** Shorter values are not worth hunting (and would blank ordinary words). */
const MIN_SECRET_CHARS = 6;
/** Shortest start of a key taken for one at the end of a cut text (shorter tails are too often ordinary words). */
const MIN_TAIL_CHARS = 10;
/** Request headers that carry a credential: the vendors' (authorization, x-api-key, xi-api-key, api-key ...) and a tool's custom ones (X-Auth-Token, X-Custom-Key, ...). */
const CREDENTIAL_HEADER = /auth|key|token|secret|password|signature|session|cookie/i;

/** The credentials in a request's headers, without their scheme (`Bearer`, `Token`, `Basic`). */
export function secretsInHeaders(headers: Record<string, string> | undefined): string[] {
  const out: string[] = [];
  for (const [name, value] of Object.entries(headers ?? {})) {
    if (!CREDENTIAL_HEADER.test(name) || typeof value !== 'string') continue;
    const secret = value.replace(/^(bearer|token|basic)\s+/i, '').trim();
    if (secret.length >= MIN_SECRET_CHARS) out.push(secret);
  }
  return out;
}

/**
 * `text` with every occurrence of each secret replaced by `[redacted]`, and a text that ends in the
 * first characters of one (a vendor body cut at a length limit mid-key) with that tail too.
 */
export function redactSecrets(text: string, secrets: readonly (string | undefined)[]): string {
  let out = text;
  for (const s of secrets) {
    if (!s || s.length < MIN_SECRET_CHARS) continue;
    if (out.includes(s)) out = out.split(s).join(REDACTED);
    for (let n = Math.min(s.length - 1, out.length); n >= MIN_TAIL_CHARS; n--) {
      if (out.endsWith(s.slice(0, n))) {
        out = out.slice(0, out.length - n) + REDACTED;
        break;
      }
    }
  }
  return out;
}
