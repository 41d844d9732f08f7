/**
 * The registry over Redis Sentinel (`REDIS_URL=redis+sentinel://...`): real redis-server processes
 * on free ports (a master, a replica, one sentinel watching them), two registries as two processes
 * would hold them. Everything the platform uses works through the sentinel (nodes, session claims,
 * node commands over pub/sub, cache invalidations, the transcript bus), and after a forced failover
 * the registry writes what it owns to the promoted master and its command channel works again.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { RedisRegistry } from '../../shared/registry/index.js';
import { createRedisTranscriptBus } from '../../shared/records/bus.js';
import { until } from '../helpers/campaigns.js';
import { uniqueName } from '../helpers/infra.js';
import { freePort } from '../helpers/free-port.js';
import { withNode } from '../helpers/redis-cluster.js';

const MASTER = 'vpmaster';
const procs: ChildProcess[] = [];
let dir = '';
let masterPort = 0;
let replicaPort = 0;
let sentinelPort = 0;
let url = '';

function redisServer(args: string[]): ChildProcess {
  const p = spawn('redis-server', args, { stdio: 'ignore' });
  procs.push(p);
  return p;
}

async function ping(port: number, timeoutMs = 10_000): Promise<void> {
  await until(async () => {
    const c = createClient({ socket: { host: '127.0.0.1', port, connectTimeout: 500, reconnectStrategy: false } });
    c.on('error', () => {});
    try {
      await c.connect();
      await c.ping();
      return true;
    } catch {
      return false;
    } finally {
      if (c.isOpen) c.destroy();
    }
  }, timeoutMs, `redis on ${port}`);
}

beforeAll(async () => {
  dir = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-sentinel-'));
  [masterPort, replicaPort, sentinelPort] = [await freePort(), await freePort(), await freePort()];
  const common = ['--bind', '127.0.0.1', '--save', '', '--appendonly', 'no', '--dir', dir];
  redisServer(['--port', String(masterPort), ...common]);
  redisServer(['--port', String(replicaPort), '--replicaof', '127.0.0.1', String(masterPort), ...common]);
  await ping(masterPort);
  await ping(replicaPort);
  const conf = path.join(dir, 'sentinel.conf');
  fs.writeFileSync(
    conf,
    [
      `port ${sentinelPort}`,
      'bind 127.0.0.1',
      `dir ${dir}`,
      `sentinel monitor ${MASTER} 127.0.0.1 ${masterPort} 1`,
      `sentinel down-after-milliseconds ${MASTER} 1000`,
      `sentinel failover-timeout ${MASTER} 5000`,
      '',
    ].join('\n'),
  );
  redisServer([conf, '--sentinel']);
  await ping(sentinelPort);
  // A failover needs the sentinel to know the replica and the replica to be in sync.
  // Listed is not enough: the sentinel promotes only a replica it has itself reached (flags exactly
  // `slave`, not `slave,disconnected`) whose link to the master it saw up; before that a FAILOVER
  // is refused (NOGOODSLAVE), which a loaded CI host hit once.
  await until(
    async () =>
      withNode(sentinelPort, async (c) => {
        const replicas = (await c.sendCommand(['SENTINEL', 'REPLICAS', MASTER])) as string[][];
        return replicas.some((r) => {
          const f = new Map<string, string>();
          for (let i = 0; i + 1 < r.length; i += 2) f.set(r[i]!, r[i + 1]!);
          return f.get('flags') === 'slave' && f.get('master-link-status') === 'ok';
        });
      }),
    20_000,
    'sentinel sees the replica, connected and in sync',
  );
  await until(async () => withNode(replicaPort, async (c) => (await c.info('replication')).includes('master_link_status:up')), 20_000, 'replica in sync');
  url = `redis+sentinel://127.0.0.1:${sentinelPort}/${MASTER}`;
}, 60_000);

afterAll(async () => {
  for (const p of procs) p.kill('SIGKILL');
  await Promise.all(procs.map((p) => (p.exitCode === null && p.signalCode === null ? new Promise((r) => p.once('exit', r)) : undefined)));
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('registry over Redis Sentinel', () => {
  let a: RedisRegistry;
  let b: RedisRegistry;
  const prefix = uniqueName('vps');

  beforeAll(async () => {
    a = await RedisRegistry.connect({ url, prefix, commandTimeoutMs: 1000 });
    b = await RedisRegistry.connect({ url, prefix, commandTimeoutMs: 1000 });
  });

  afterAll(async () => {
    await a?.close();
    await b?.close();
  });

  it('serves nodes, claims, node commands and invalidations through the sentinel', async () => {
    await a.nodes.heartbeat({ nodeId: 'node-a', wsUrl: 'ws://a', capacity: 10, load: 0, updatedAtMs: Date.now() }, 60_000);
    expect((await b.nodes.listNodes()).map((n) => n.nodeId)).toEqual(['node-a']);
    // The data is on the master the sentinel names.
    expect(await withNode(masterPort, (c) => c.exists(`${prefix}:node:node-a`))).toBe(1);

    await b.sessions.putSession({ sessionId: 's1', agentId: 'ag', nodeId: 'node-a', config: {}, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    expect((await a.sessions.claimSession('s1', 'node-a', 60_000)).status).toBe('claimed');
    expect(await b.sessions.claimSession('s1', 'node-b', 60_000)).toEqual({ status: 'taken', ownerNodeId: 'node-a' });

    const stop = await a.commands.serveCommands('node-a', async (cmd) => ({ echoed: cmd.kind }));
    expect(await b.commands.sendCommand('node-a', { kind: 'ping' }, 3000)).toEqual({ echoed: 'ping' });
    await stop();

    const seen: string[] = [];
    await a.invalidations.subscribe((topic, key) => void seen.push(`${topic}/${key}`));
    expect(await b.invalidations.publish('agent', 'x1')).toBe(true);
    await until(() => seen.includes('agent/x1'), 5_000, 'invalidation delivered');
  });

  it('carries the live transcript bus', async () => {
    const pub = await createRedisTranscriptBus({ url, prefix });
    const sub = await createRedisTranscriptBus({ url, prefix });
    try {
      const got: unknown[] = [];
      const off = await sub.subscribe('conv-1', (ev) => void got.push(ev));
      pub.publish({ type: 'end', conversation_id: 'conv-1' } as never);
      await until(() => got.length === 1, 5_000, 'transcript event');
      await off();
    } finally {
      await pub.close();
      await sub.close();
    }
  });

  it('after a failover writes what it owns to the promoted master and serves commands again', { timeout: 60_000 }, async () => {
    await a.nodes.heartbeat({ nodeId: 'node-a', wsUrl: 'ws://a', capacity: 10, load: 1, updatedAtMs: Date.now() }, 600_000);
    // Writes that reached the old master after the replica's last sync could be lost in a
    // failover; the owner's replay is what restores them. Remove the entry from the replica's
    // view by deleting it on the master and waiting for the replica to follow, so only the
    // replay can bring it back.
    await withNode(masterPort, (c) => c.del(`${prefix}:node:node-a`));
    await until(async () => (await withNode(replicaPort, (c) => c.exists(`${prefix}:node:node-a`))) === 0, 10_000, 'replica caught up');

    // Refused while the sentinel's view of the replica is not fresh enough (NOGOODSLAVE) or a
    // failover is still in progress (INPROG): asked again until accepted.
    await until(
      async () =>
        withNode(sentinelPort, (c) => c.sendCommand(['SENTINEL', 'FAILOVER', MASTER])).then(
          () => true,
          (err: Error) => {
            if (/NOGOODSLAVE|INPROG/.test(err.message)) return false;
            throw err;
          },
        ),
      20_000,
      'failover accepted',
      250,
    );
    // The sentinel disconnects every client of both servers as it reconfigures them (so clients
    // find the new master): a probe cut that way ("The client is closed") is asked again.
    const probe = <T>(port: number, fn: (c: Parameters<Parameters<typeof withNode>[1]>[0]) => Promise<T>) => withNode(port, fn).catch(() => undefined);
    await until(async () => (await probe(replicaPort, async (c) => (await c.info('replication')).includes('role:master'))) === true, 30_000, 'replica promoted');
    // The owner wrote its node again on the new master (replay on the master change).
    await until(async () => (await probe(replicaPort, (c) => c.exists(`${prefix}:node:node-a`))) === 1, 30_000, 'node replayed on the new master');

    // Commands and pub/sub work on the new topology.
    const stop = await a.commands.serveCommands('node-a', async () => 'pong');
    await until(async () => (await b.commands.sendCommand('node-a', { kind: 'ping' }, 2000).catch(() => undefined)) === 'pong', 30_000, 'command after failover');
    await stop();
    await b.sessions.putSession({ sessionId: 's2', agentId: 'ag', nodeId: 'node-a', config: {}, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    expect((await a.sessions.claimSession('s2', 'node-a', 60_000)).status).toBe('claimed');
    // The claim landed on the promoted master (the old replica).
    expect(await withNode(replicaPort, (c) => c.get(`${prefix}:{s:s2}:owner`))).toBe('node-a');
  });
});
