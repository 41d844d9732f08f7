/**
 * A real Redis Cluster for tests: three masters (no replicas) as redis-server processes on free
 * ports in a temp dir, slots assigned by `redis-cli --cluster create`. No persistence, so a node
 * restarted with `restart()` comes back empty (its cluster config, nodes.conf, is kept).
 */
import { spawn, execFile, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { createClient } from 'redis';
import { until } from './campaigns.js';
import { freePort } from './free-port.js';

const run = promisify(execFile);

/** Runs `fn` with a plain (non-cluster) client on one node. */
export async function withNode<T>(port: number, fn: (c: ReturnType<typeof createClient>) => Promise<T>): Promise<T> {
  const c = createClient({ socket: { host: '127.0.0.1', port, connectTimeout: 1000, reconnectStrategy: false } });
  c.on('error', () => {});
  await c.connect();
  try {
    return await fn(c);
  } finally {
    c.destroy();
  }
}

interface ClusterNode {
  port: number;
  busPort: number;
  proc: ChildProcess;
}

export class TestRedisCluster {
  readonly nodes: ClusterNode[] = [];
  private constructor(readonly dir: string) {}

  /** `redis+cluster://` URL listing every node as a seed. */
  get url(): string {
    return `redis+cluster://${this.nodes.map((n) => `127.0.0.1:${n.port}`).join(',')}`;
  }

  static async start(masters = 3): Promise<TestRedisCluster> {
    const c = new TestRedisCluster(fs.mkdtempSync(path.join(os.tmpdir(), 'vp-cluster-')));
    try {
      for (let i = 0; i < masters; i++) {
        // The cluster bus port is chosen too (the default, port + 10000, may not be free or valid).
        const node = { port: await freePort(), busPort: await freePort(), proc: undefined as unknown as ChildProcess };
        node.proc = c.spawnNode(node.port, node.busPort);
        c.nodes.push(node);
      }
      for (const n of c.nodes) await c.waitUp(n.port);
      await run('redis-cli', ['--cluster', 'create', ...c.nodes.map((n) => `127.0.0.1:${n.port}`), '--cluster-yes'], { timeout: 30_000 });
      await c.waitOk();
      return c;
    } catch (err) {
      await c.stop();
      throw err;
    }
  }

  private spawnNode(port: number, busPort: number): ChildProcess {
    const args = ['--port', String(port), '--cluster-port', String(busPort), '--bind', '127.0.0.1', '--dir', this.dir];
    args.push('--cluster-enabled', 'yes', '--cluster-config-file', `nodes-${port}.conf`, '--cluster-node-timeout', '2000');
    // Slots of a node that is down fail; the others keep serving.
    args.push('--cluster-require-full-coverage', 'no', '--save', '', '--appendonly', 'no');
    return spawn('redis-server', args, { stdio: 'ignore' });
  }

  private async waitUp(port: number): Promise<void> {
    await until(async () => withNode(port, async (c) => (await c.ping()) === 'PONG').catch(() => false), 10_000, `redis on ${port}`);
  }

  /** Every node reports cluster_state:ok. */
  async waitOk(timeoutMs = 30_000): Promise<void> {
    await until(
      async () => {
        for (const n of this.nodes) {
          const info = await withNode(n.port, (c) => c.sendCommand(['CLUSTER', 'INFO'])).catch(() => '');
          if (!String(info).includes('cluster_state:ok')) return false;
        }
        return true;
      },
      timeoutMs,
      'cluster state ok',
    );
  }

  /** The port of the master serving `key`'s slot. */
  async portOfKey(key: string): Promise<number> {
    const slot = Number(await withNode(this.nodes[0]!.port, (c) => c.sendCommand(['CLUSTER', 'KEYSLOT', key])));
    const shards = (await withNode(this.nodes[0]!.port, (c) => c.sendCommand(['CLUSTER', 'SLOTS'])) as unknown) as Array<[number, number, [string, number]]>;
    const shard = shards.find(([from, to]) => slot >= from && slot <= to);
    if (!shard) throw new Error(`no node serves slot ${slot}`);
    return Number(shard[2][1]);
  }

  /** SIGKILLs one node and starts it again on the same ports: empty data, same slots. */
  async restart(port: number): Promise<void> {
    const n = this.nodes.find((x) => x.port === port)!;
    await killAndWait(n.proc);
    n.proc = this.spawnNode(n.port, n.busPort);
    await this.waitUp(n.port);
  }

  async stop(): Promise<void> {
    await Promise.all(this.nodes.map((n) => killAndWait(n.proc)));
    fs.rmSync(this.dir, { recursive: true, force: true });
  }
}

async function killAndWait(p: ChildProcess): Promise<void> {
  if (p.exitCode !== null || p.signalCode !== null) return;
  const exited = new Promise((r) => p.once('exit', r));
  p.kill('SIGKILL');
  await exited;
}
