/**
 * The outbound address policy (issue 11, defect 3): which IP addresses a request whose URL a
 * tenant controls may connect to. Pure; all IP parsing is ipaddr.js's (it also reads the legacy
 * IPv4 spellings `2130706433`, `0x7f000001`, `0177.0.0.1`, `127.1`).
 *
 * Rule: an address is allowed when it is inside an operator CIDR (`OUTBOUND_ALLOW_CIDRS`), or when
 * it is public unicast:
 * - IPv4: ipaddr.js range `unicast` only; refused: loopback 127/8, private 10/8 172.16/12
 *   192.168/16, link-local 169.254/16 (cloud metadata 169.254.169.254), CGNAT 100.64/10,
 *   multicast, broadcast, unspecified 0/8, reserved (240/4, documentation nets, benchmarking),
 *   as112, amt.
 * - IPv6: global unicast 2000::/3 with ipaddr.js range `unicast` only; refused: ::1, ::, ULA
 *   fc00::/7, link-local fe80::/10, multicast, IPv4-compatible ::a.b.c.d (outside 2000::/3),
 *   teredo, documentation, ORCHID, ... IPv4-mapped (::ffff:a.b.c.d), IPv4-translated
 *   (::ffff:0:a.b.c.d), NAT64 (64:ff9b::/96) and 6to4 (2002::/16) addresses are judged by the
 *   IPv4 address they carry, so `::ffff:127.0.0.1` is loopback and a DNS64 address of a public
 *   host is fine.
 */
import ipaddr from 'ipaddr.js';

export type IpAddress = ipaddr.IPv4 | ipaddr.IPv6;
type Cidr = [IpAddress, number];

export interface OutboundPolicy {
  /** Operator exceptions, parsed (from `OUTBOUND_ALLOW_CIDRS`). */
  readonly allow: readonly Cidr[];
}

/** Global unicast (IANA 2000::/3): the only IPv6 block that holds public hosts. */
const GLOBAL_UNICAST_V6 = ipaddr.parseCIDR('2000::/3');

/**
 * Parses `OUTBOUND_ALLOW_CIDRS` (comma-separated; a bare address means that one host). Throws an
 * Error whose message says which entry is wrong; config.ts turns it into a ConfigError.
 */
export function parseAllowCidrs(text: string | readonly string[] | undefined): string[] {
  const entries = typeof text === 'string' ? text.split(',') : (text ?? []);
  const out: string[] = [];
  for (const raw of entries) {
    const entry = raw.trim();
    if (!entry) continue;
    let cidr: Cidr;
    try {
      cidr = entry.includes('/') ? ipaddr.parseCIDR(entry) : hostCidr(ipaddr.parse(entry));
    } catch {
      throw new Error(`entry "${entry}" is not a CIDR such as 10.0.0.0/8 or fd00::/8`);
    }
    // Re-printed in canonical form, so the config shows what is actually allowed.
    out.push(`${cidr[0].toString()}/${cidr[1]}`);
  }
  return out;
}

function hostCidr(a: IpAddress): Cidr {
  return [a, a.kind() === 'ipv4' ? 32 : 128];
}

/** Builds a policy from validated CIDR strings (see parseAllowCidrs). */
export function createOutboundPolicy(allowCidrs: readonly string[] = []): OutboundPolicy {
  return { allow: parseAllowCidrs(allowCidrs).map((c) => ipaddr.parseCIDR(c)) };
}

/** True when `host` (a URL hostname, brackets allowed) is an IP literal in any spelling ipaddr.js reads. */
export function isIpLiteral(host: string): boolean {
  return ipaddr.isValid(unbracket(host));
}

export function unbracket(host: string): string {
  return host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host;
}

/**
 * Why `address` is refused (the ipaddr.js range name, e.g. `loopback`, `private`,
 * `linkLocal`), or undefined when it may be connected to. `address` is any IP literal ipaddr.js
 * reads; anything else is refused as `invalid`.
 */
export function refusalReason(policy: OutboundPolicy, address: string): string | undefined {
  let parsed: IpAddress;
  try {
    parsed = ipaddr.parse(unbracket(address));
  } catch {
    return 'invalid';
  }
  if (isListed(policy, parsed)) return undefined;
  const effective = embeddedIpv4(parsed) ?? parsed;
  if (effective !== parsed && isListed(policy, effective)) return undefined;
  if (effective.kind() === 'ipv4') {
    const range = effective.range();
    return range === 'unicast' ? undefined : range;
  }
  const v6 = effective as ipaddr.IPv6;
  const range = v6.range();
  if (range !== 'unicast') return range;
  return v6.match(GLOBAL_UNICAST_V6) ? undefined : 'reserved';
}

function isListed(policy: OutboundPolicy, a: IpAddress): boolean {
  return policy.allow.some(([net, bits]) => net.kind() === a.kind() && a.match(net, bits));
}

/**
 * The IPv4 address an IPv6 transition address carries (mapped, translated, NAT64 /96, 6to4), so
 * it is judged like that IPv4 address. Teredo hides its client address (XOR-ed): it is refused
 * by its range instead.
 */
function embeddedIpv4(a: IpAddress): ipaddr.IPv4 | undefined {
  if (a.kind() !== 'ipv6') return undefined;
  const v6 = a as ipaddr.IPv6;
  const range = v6.range();
  const bytes = v6.toByteArray();
  if (range === 'ipv4Mapped' || range === 'rfc6145') return new ipaddr.IPv4(bytes.slice(12, 16));
  // rfc6052 also names 64:ff9b:1::/48 (local-use NAT64, RFC 8215): no fixed IPv4 position, refused by range.
  if (range === 'rfc6052' && v6.match(ipaddr.parseCIDR('64:ff9b::/96') as [ipaddr.IPv6, number])) return new ipaddr.IPv4(bytes.slice(12, 16));
  if (range === '6to4') return new ipaddr.IPv4(bytes.slice(2, 6));
  return undefined;
}
