/**
 * Who may open a voice socket on this node (issue 11, "socket-cap exhaustion"): at most
 * `MAX_SOCKETS` per node and `MAX_SOCKETS_PER_IP` per client address. A slot is taken when the
 * upgrade request arrives (so upgrades waiting on a registry claim count too) and given back when
 * the socket closes or the upgrade is abandoned. Sockets that never become calls are closed by the
 * node's start deadline, so they cannot hold slots for longer than that.
 */
import ipaddr from 'ipaddr.js';
import type { HttpResponse } from '../uws.js';

export type Admission = 'ok' | 'node_full' | 'address_full';

export class SocketAdmission {
  private total = 0;
  /** Upgrades admitted and refused since the node started (its health report's request / error counts). */
  admittedTotal = 0;
  refusedTotal = 0;
  /** Open sockets per address key; entries are deleted at 0, so the map holds at most `total` keys. */
  private readonly perAddress = new Map<string, number>();

  constructor(
    private readonly maxSockets: number,
    private readonly maxPerAddress: number,
  ) {}

  /** 'ok' reserves a slot for `key`; the caller must `release(key)` it exactly once. */
  admit(key: string): Admission {
    if (this.total >= this.maxSockets) {
      this.refusedTotal++;
      return 'node_full';
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

/** Answers a refused upgrade: 503 when the node is full, 429 with Retry-After for one address. */
export function refuseUpgrade(res: HttpResponse, verdict: Exclude<Admission, 'ok'>): void {
  const [status, code, message] =
    verdict === 'address_full'
      ? ['429 Too Many Requests', 'RATE_LIMITED', 'too many sockets from this address']
      : ['503 Service Unavailable', 'SERVICE_UNAVAILABLE', 'concurrent socket cap reached'];
  res.cork(() => {
    res.writeStatus(status).writeHeader('content-type', 'application/json').writeHeader('retry-after', '5');
    res.end(JSON.stringify({ error: { code, message } }));
  });
}
