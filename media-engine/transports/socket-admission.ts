/**
 * Who may open a voice socket on this node (issue 11, "socket-cap exhaustion"): at most
 * `MAX_SOCKETS` per node and `MAX_SOCKETS_PER_IP` per client address. A slot is taken when the
 * upgrade request arrives (so upgrades waiting on a registry claim count too) and given back when
 * the socket closes or the upgrade is abandoned. Sockets that never become calls are closed by the
 * node's start deadline, so they cannot hold slots for longer than that.
 */
import ipaddr from 'ipaddr.js';
import type { HttpResponse } from '../uws.js';
import { realClock, type Clock } from '../../shared/clock.js';
import { TokenBucket } from '../session/token-bucket.js';

export type Admission = 'ok' | 'node_full' | 'address_full' | 'address_rate';

/**
 * New sockets per address: a carrier opens each call's stream from a few addresses of its own, so
 * the bound is generous (a burst of 400, then 100 a second, far above a node's call rate), while a
 * client churning sockets (open, junk, reconnect: 800 a second measured) can no longer take a
 * core from the node's calls. Refused upgrades cost a few microseconds and no parse.
 */
export const SOCKET_OPENS_PER_ADDRESS = { burst: 400, perSecond: 100 };
/** Addresses whose open rate is tracked at most; past it the longest-tracked one is forgotten (a fresh bucket). */
const MAX_RATE_ENTRIES = 10_000;

export class SocketAdmission {
  private total = 0;
  /** Upgrades admitted and refused since the node started (its health report's request / error counts). */
  admittedTotal = 0;
  refusedTotal = 0;
  /** Open sockets per address key; entries are deleted at 0, so the map holds at most `total` keys. */
  private readonly perAddress = new Map<string, number>();

  /** New sockets per address key. */
  private readonly opens = new Map<string, TokenBucket>();

  constructor(
    private readonly maxSockets: number,
    private readonly maxPerAddress: number,
    private readonly clock: Clock = realClock,
    private readonly opensPerAddress = SOCKET_OPENS_PER_ADDRESS,
  ) {}

  /** 'ok' reserves a slot for `key`; the caller must `release(key)` it exactly once. */
  admit(key: string): Admission {
    if (this.total >= this.maxSockets) {
      this.refusedTotal++;
      return 'node_full';
    }
    if (!this.takeOpen(key)) {
      this.refusedTotal++;
      return 'address_rate';
    }
    const n = this.perAddress.get(key) ?? 0;
    if (n >= this.maxPerAddress) {
      this.refusedTotal++;
      return 'address_full';
    }
    this.admittedTotal++;
    this.total++;
    this.perAddress.set(key, n + 1);
    return 'ok';
  }

  private takeOpen(key: string): boolean {
    let bucket = this.opens.get(key);
    if (!bucket) {
      if (this.opens.size >= MAX_RATE_ENTRIES) this.opens.delete(this.opens.keys().next().value!);
      bucket = new TokenBucket(this.clock, this.opensPerAddress.burst, this.opensPerAddress.perSecond);
      this.opens.set(key, bucket);
    }
    return bucket.take();
  }

  release(key: string): void {
    const n = this.perAddress.get(key);
    if (n === undefined) return;
    this.total--;
    if (n <= 1) this.perAddress.delete(key);
    else this.perAddress.set(key, n - 1);
  }

  get count(): number {
    return this.total;
  }

  /** Distinct client addresses holding sockets. */
  get addresses(): number {
    return this.perAddress.size;
  }
}

/**
 * The key a socket is counted under: the IPv4 address (also when it arrives IPv4-mapped), or the
 * IPv6 /64 (one subscriber usually holds a whole /64, so per-address would be no limit at all).
 */
export function addressKey(remote: string): string {
  try {
    const a = ipaddr.process(remote);
    if (a.kind() === 'ipv4') return a.toString();
    return `${(a as ipaddr.IPv6).parts.slice(0, 4).map((p) => p.toString(16)).join(':')}::/64`;
  } catch {
    return remote.slice(0, 64);
  }
}

/** Answers a refused upgrade: 503 when the node is full, 429 with Retry-After for one address (too many open, or opened too fast). */
export function refuseUpgrade(res: HttpResponse, verdict: Exclude<Admission, 'ok'>): void {
  const [status, code, message] =
    verdict === 'address_full'
      ? ['429 Too Many Requests', 'RATE_LIMITED', 'too many sockets from this address']
      : verdict === 'address_rate'
        ? ['429 Too Many Requests', 'RATE_LIMITED', 'too many new sockets from this address']
        : ['503 Service Unavailable', 'SERVICE_UNAVAILABLE', 'concurrent socket cap reached'];
  res.cork(() => {
    res.writeStatus(status).writeHeader('content-type', 'application/json').writeHeader('retry-after', '5');
    res.end(JSON.stringify({ error: { code, message } }));
  });
}
