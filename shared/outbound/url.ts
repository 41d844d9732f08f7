/**
 * URL-level checks, before any DNS: scheme, credentials in the URL, and hosts that are literal
 * refused addresses in any spelling (WHATWG parsing already turns `http://2130706433/` into
 * `127.0.0.1`; ipaddr.js reads what is left) or `localhost` / `*.localhost` (RFC 6761: always
 * loopback). DNS names are judged at connect time, every time (lookup.ts).
 *
 * Save time (`assertTenantUrl`): a 400 INVALID_REQUEST naming the field. No DNS lookup is made
 * at save time: an answer then says nothing about the answer at call time (the name may be
 * re-pointed), and a save must not fail because DNS is slow or down.
 */
import { invalid } from '../errors.js';
import { outboundRefused } from './errors.js';
import { isIpLiteral, refusalReason, type OutboundPolicy } from './policy.js';

export const HTTP_PROTOCOLS: readonly string[] = ['http:', 'https:'];
/** `ws` also accepts http(s) URLs for WebSocket endpoints. */
export const WS_PROTOCOLS: readonly string[] = ['ws:', 'wss:', 'http:', 'https:'];

/** Why `url` may not be requested, or undefined. `protocols` default http/https. */
export function urlProblem(url: URL, policy: OutboundPolicy, protocols: readonly string[] = HTTP_PROTOCOLS): string | undefined {
  if (!protocols.includes(url.protocol)) return `must be an ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`;
  if (url.username || url.password) return 'must not contain credentials (user:password@); use the auth fields';
  const host = url.hostname.toLowerCase().replace(/\.$/, '');
  if (host === 'localhost' || host.endsWith('.localhost')) {
    // localhost is 127.0.0.1 and ::1 (RFC 6761): allowed only where the operator allowed loopback.
    if (refusalReason(policy, '127.0.0.1') !== undefined && refusalReason(policy, '::1') !== undefined) return 'must not point at localhost';
    return undefined;
  }
  if (isIpLiteral(host) && refusalReason(policy, host) !== undefined) {
    return 'must not point at a loopback, private, link-local or other internal address (operators may allow one with OUTBOUND_ALLOW_CIDRS)';
  }
  return undefined;
}

/**
 * Save-time check of a tenant URL: throws 400 INVALID_REQUEST naming `field`. Returns the parsed
 * URL. Callers handle empty values and length limits themselves.
 */
export function assertTenantUrl(value: string | URL, field: string, policy: OutboundPolicy, protocols: readonly string[] = HTTP_PROTOCOLS): URL {
  let url: URL;
  try {
    url = typeof value === 'string' ? new URL(value) : value;
  } catch {
    throw invalid(field, `must be an absolute ${protocols.map((p) => p.slice(0, -1)).join(' or ')} URL`);
  }
  const problem = urlProblem(url, policy, protocols);
  if (problem) throw invalid(field, problem);
  return url;
}

/** Call-time form: throws OUTBOUND_REFUSED naming the host. */
export function assertRequestUrl(value: string | URL, policy: OutboundPolicy, protocols: readonly string[] = HTTP_PROTOCOLS): URL {
  let url: URL;
  try {
    url = typeof value === 'string' ? new URL(value) : new URL(value.href);
  } catch {
    throw outboundRefused('(unparseable URL)', 'not an absolute URL');
  }
  const problem = urlProblem(url, policy, protocols);
  if (problem) throw outboundRefused(url.hostname, problem);
  return url;
}
