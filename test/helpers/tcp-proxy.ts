/**
 * A TCP proxy for outage tests: put it between the code under test and a real Postgres or Redis,
 * then break the network the way production breaks it.
 *
 * - `reset()`: every open connection is reset (RST) and new ones are reset on accept, as when the
 *   server process is gone or a firewall rejects: the client sees ECONNRESET at once.
 * - `partition()`: nothing is forwarded any more, in either direction, on old or new connections;
 *   no error reaches the client (a black hole, as with a dead switch or a lost route). Bytes wait
 *   in the proxy, so `restore()` after a partition resumes the same streams, like TCP does when a
 *   route comes back.
 * - `restore()`: forward again (new connections reach the target).
 */
import net from 'node:net';

type Mode = 'forward' | 'reset' | 'partition';

interface Pair {
  client: net.Socket;
  upstream: net.Socket;
}

export class TcpProxy {
  private mode: Mode = 'forward';
  private readonly pairs = new Set<Pair>();
  /** Accepted while partitioned: connected to the target only once restored. */
  private readonly waiting = new Set<net.Socket>();

  private constructor(
    private readonly server: net.Server,
    private readonly target: { host: string; port: number },
    readonly port: number,
  ) {}

  static async start(targetHost: string, targetPort: number): Promise<TcpProxy> {
    let proxy: TcpProxy | undefined;
    const server = net.createServer((client) => proxy!.accept(client));
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(0, '127.0.0.1', () => resolve());
    });
    proxy = new TcpProxy(server, { host: targetHost, port: targetPort }, (server.address() as net.AddressInfo).port);
    return proxy;
  }

  /** `postgres://...` or `redis://...` URL with the host and port replaced by this proxy. */
  urlFor(targetUrl: string): string {
    const u = new URL(targetUrl);
    u.hostname = '127.0.0.1';
    u.port = String(this.port);
    return u.toString();
  }

  /** Open client connections (forwarded or waiting). */
  get connections(): number {
    return this.pairs.size + this.waiting.size;
  }

  private accept(client: net.Socket): void {
    client.on('error', () => {});
    if (this.mode === 'reset') return void client.resetAndDestroy();
    if (this.mode === 'partition') {
      client.pause();
      this.waiting.add(client);
      client.once('close', () => this.waiting.delete(client));
      return;
    }
    this.link(client);
  }

  private link(client: net.Socket): void {
    const upstream = net.connect(this.target.port, this.target.host);
    const pair: Pair = { client, upstream };
    this.pairs.add(pair);
    const drop = () => {
      if (!this.pairs.delete(pair)) return;
      client.destroy();
      upstream.destroy();
    };
    upstream.on('error', drop).on('close', drop);
    client.on('error', drop).on('close', drop);
    client.pipe(upstream);
    upstream.pipe(client);
    if (this.mode === 'partition') this.freeze(pair);
  }

  /** Stop reading both ends: the bytes stay queued (in the kernel and here) until `restore()`. */
  private freeze(p: Pair): void {
    p.client.unpipe(p.upstream);
    p.upstream.unpipe(p.client);
    p.client.pause();
    p.upstream.pause();
  }

  reset(): void {
    this.mode = 'reset';
    for (const p of [...this.pairs]) {
      this.pairs.delete(p);
      p.client.resetAndDestroy();
      p.upstream.destroy();
    }
    for (const s of [...this.waiting]) s.resetAndDestroy();
    this.waiting.clear();
  }

  partition(): void {
    this.mode = 'partition';
    for (const p of this.pairs) this.freeze(p);
  }

  restore(): void {
    const wasPartitioned = this.mode === 'partition';
    this.mode = 'forward';
    if (!wasPartitioned) return;
    for (const p of this.pairs) {
      p.client.pipe(p.upstream);
      p.upstream.pipe(p.client);
    }
    for (const s of [...this.waiting]) {
      this.waiting.delete(s);
      if (!s.destroyed) this.link(s);
      s.resume();
    }
  }

  async close(): Promise<void> {
    this.reset();
    await new Promise<void>((resolve) => this.server.close(() => resolve()));
  }
}
