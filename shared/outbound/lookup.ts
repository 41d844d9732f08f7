/**
 * Name resolution under the policy. `policyLookup` has the signature of `dns.lookup`, so it goes
 * wherever Node connects a socket (`net.connect` / `tls.connect` options, hence undici's
 * connector and the `ws` client): the socket connects to an address this function returned, that
 * is, to an address that passed the policy. There is no window between "checked" and
 * "connected" for a DNS answer to change (DNS rebinding), and TLS still verifies the name (SNI
 * and certificate use the hostname; only the TCP destination comes from here).
 *
 * Every address a name resolves to must pass: a name that mixes public and internal addresses
 * is refused whole (it is either misconfigured or an attack, and refusing is the simple rule).
 */
import dns from 'node:dns';
import type { LookupAddress, LookupOptions } from 'node:dns';
import ipaddr from 'ipaddr.js';
import { realClock, type Clock } from '../clock.js';
import { boundedWork } from '../bounded-work.js';
import { systemError } from '../errors.js';
import { notPublic } from './errors.js';
import { refusalReason, unbracket, type OutboundPolicy } from './policy.js';

export interface ResolvedAddress {
  address: string;
  /** 4 or 6. */
  family: number;
}

/** Resolves a host name to all its addresses (injectable so tests can point a name at 127.0.0.1). */
export type Resolver = (hostname: string) => Promise<ResolvedAddress[]>;

/**
 * getaddrinfo runs on libuv's thread pool (4 threads by default), which file reads, crypto (scrypt,
 * pbkdf2) and zlib share. A tenant name whose DNS server never answers holds a thread for the
 * resolver's own timeout (seconds), so a burst of them would stall the whole process's file and
 * crypto work. Tenant lookups therefore get at most this many threads at once...
 */
export const MAX_CONCURRENT_LOOKUPS = 2;
/** ...and at most this many waiting; beyond that a lookup fails at once (EAI_AGAIN, retryable). */
export const MAX_QUEUED_LOOKUPS = 256;

/** Bounds concurrent calls of `resolve`: FIFO, a bounded queue, a slot freed only when a lookup settles. */
export function boundedResolver(resolve: Resolver, maxConcurrent: number, maxQueued: number): Resolver {
  const run = boundedWork({ maxConcurrent, maxWaiting: maxQueued, refused: () => systemError('EAI_AGAIN', 'too many DNS lookups in flight') });
  return (hostname) => run(() => resolve(hostname));
}

/**
 * The system resolver (getaddrinfo, /etc/hosts included), every address, in resolver order, with
 * at most MAX_CONCURRENT_LOOKUPS on the thread pool at once.
 */
export const systemResolver: Resolver = boundedResolver(
  (hostname) => dns.promises.lookup(hostname, { all: true, verbatim: true }),
  MAX_CONCURRENT_LOOKUPS,
  MAX_QUEUED_LOOKUPS,
);

export interface PolicyLookupOptions {
  policy: OutboundPolicy;
  /** Default: systemResolver. */
  resolver?: Resolver;
  /** A resolution slower than this fails (getaddrinfo has no timeout of its own). Default 5000 ms. */
  resolveTimeoutMs?: number;
  clock?: Clock;
}

type LookupCallback = (err: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;
/** `dns.lookup`-compatible (both the single-address and the `all: true` forms). */
export type PolicyLookupFn = (hostname: string, options: LookupOptions | number | undefined, callback: LookupCallback) => void;

/**
 * Resolves `host` (a name, or an IP literal in any spelling) and returns its addresses if all of
 * them pass the policy; rejects with OUTBOUND_REFUSED otherwise.
 */
export async function resolveAllowed(host: string, opts: PolicyLookupOptions): Promise<ResolvedAddress[]> {
  const name = unbracket(host);
  let addresses: ResolvedAddress[];
  if (ipaddr.isValid(name)) {
    // A literal (also `2130706433`, `0x7f000001`, `127.1`): never handed to getaddrinfo, which reads these spellings too.
    const parsed = ipaddr.parse(name);
    addresses = [{ address: parsed.toString(), family: parsed.kind() === 'ipv4' ? 4 : 6 }];
  } else {
    addresses = await withTimeout((opts.resolver ?? systemResolver)(name), opts.resolveTimeoutMs ?? 5000, opts.clock ?? realClock, name);
  }
  if (addresses.length === 0) throw systemError('ENOTFOUND', `${name}: no address`);
  for (const a of addresses) if (refusalReason(opts.policy, a.address) !== undefined) throw notPublic(name);
  return addresses;
}

export function createPolicyLookup(opts: PolicyLookupOptions): PolicyLookupFn {
  return (hostname, options, callback) => {
    const o: LookupOptions = typeof options === 'number' ? { family: options } : (options ?? {});
    resolveAllowed(hostname, opts).then(
      (all) => {
        const family = o.family === 'IPv4' ? 4 : o.family === 'IPv6' ? 6 : o.family;
        const usable = family === 4 || family === 6 ? all.filter((a) => a.family === family) : all;
        if (usable.length === 0) {
          return callback(systemError('ENOTFOUND', `${hostname}: no IPv${family} address`), '', 0);
        }
        if (o.all) callback(null, usable);
        else callback(null, usable[0]!.address, usable[0]!.family);
      },
      (err: Error) => callback(err as NodeJS.ErrnoException, '', 0),
    );
  };
}

function withTimeout<T>(p: Promise<T>, ms: number, clock: Clock, name: string): Promise<T> {
  return new Promise((resolve, reject) => {
    const timer = clock.setTimeout(() => reject(systemError('ETIMEOUT', `${name}: DNS lookup timed out after ${ms} ms`)), ms);
    p.then(
      (v) => {
        clock.clearTimeout(timer);
        resolve(v);
      },
      (e: unknown) => {
        clock.clearTimeout(timer);
        reject(e);
      },
    );
  });
}
