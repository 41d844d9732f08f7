/**
 * The Redis registry: the parts over one `RedisConnection` (one client pair, one journal).
 * On every reconnect or Sentinel failover (Redis may have come back empty) it writes again
 * what this process owns: its node, its sessions and claims, its live calls.
 */
import type { Registry } from '../types.js';
import { RedisCommandBus } from './commands.js';
import { RedisConnection, type RedisRegistryOptions } from './connection.js';
import { RedisLiveCallStore } from './calls.js';
import { RedisNodeDirectory } from './nodes.js';
import { RedisSessionStore } from './sessions.js';
import { RedisRateLimitWindows } from './windows.js';
import { RedisInvalidationBus } from './invalidations.js';
import { RedisBillingStates } from './billing.js';

export { redisClientOptions, type RedisRegistryOptions } from './connection.js';

/** Replayed entries written per round trip batch. */
const REPLAY_BATCH = 100;

export class RedisRegistry implements Registry {
  readonly kind = 'redis' as const;
  readonly nodes: RedisNodeDirectory;
  readonly sessions: RedisSessionStore;
  readonly calls: RedisLiveCallStore;
  readonly windows: RedisRateLimitWindows;
  readonly invalidations: RedisInvalidationBus;
  readonly billing: RedisBillingStates;

  private constructor(
    private readonly conn: RedisConnection,
    readonly commands: RedisCommandBus,
  ) {
    this.nodes = new RedisNodeDirectory(conn);
    this.sessions = new RedisSessionStore(conn);
    this.calls = new RedisLiveCallStore(conn);
    this.windows = new RedisRateLimitWindows(conn);
    this.invalidations = new RedisInvalidationBus(conn);
    this.billing = new RedisBillingStates(conn);
  }

  static async connect(opts: RedisRegistryOptions): Promise<RedisRegistry> {
    const conn = await RedisConnection.open(opts);
    const reg = new RedisRegistry(conn, await RedisCommandBus.start(conn));
    // Every later `ready` is a reconnect: Redis may have restarted empty.
    conn.onReconnect(() => void reg.replay());
    return reg;
  }

  /** Writes again everything this process owns (node, sessions and claims, live calls). */
  async replay(): Promise<void> {
    const { conn } = this;
    const { node, sessions, calls } = conn.journal.snapshot();
    try {
      if (node) await conn.op(() => this.nodes.writeNode(node.node, node.ttlMs));
      for (let i = 0; i < sessions.length; i += REPLAY_BATCH) {
        await conn.op(() => this.sessions.replay(sessions.slice(i, i + REPLAY_BATCH)));
      }
      for (let i = 0; i < calls.length; i += REPLAY_BATCH) {
        await conn.op(() => Promise.all(calls.slice(i, i + REPLAY_BATCH).map((c) => this.calls.writeCall(c, 0))));
      }
      if (node || sessions.length || calls.length) conn.logger?.info({ node: node?.node.nodeId, sessions: sessions.length, calls: calls.length }, 'registry: replayed owned state after (re)connect');
    } catch (err) {
      conn.logger?.warn({ err }, 'registry: replay failed; retried on the next reconnect');
    }
  }

  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.commands.close();
    this.invalidations.close();
    await this.conn.close();
  }
}
