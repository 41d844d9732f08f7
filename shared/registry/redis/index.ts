/**
 * The Redis registry: the parts over one `RedisConnection` (one client pair, one journal).
 * On every reconnect, Sentinel failover or Cluster node reconnect/failover (Redis may have come
 * back empty) it writes again what this process owns: its node, its sessions and claims, its
 * live calls.
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
import { backoffDelayMs } from '../../backoff.js';

export { redisClientOptions, type RedisRegistryOptions } from './connection.js';

/** Replayed entries written per round trip batch. */
const REPLAY_BATCH = 100;
/**
 * Attempts of one replay. A reconnect can come before the server takes writes: a Redis Cluster
 * master that restarted refuses them (CLUSTERDOWN) for about 2 s while it rejoins, a server
 * loading its dataset answers LOADING. Waits: 125-250 ms, doubling up to 2-4 s; at most 16 s in all.
 */
const REPLAY_ATTEMPTS = 8;

export class RedisRegistry implements Registry {
  readonly kind = 'redis' as const;
  readonly nodes: RedisNodeDirectory;
  readonly sessions: RedisSessionStore;
  readonly calls: RedisLiveCallStore;
  readonly windows: RedisRateLimitWindows;
  readonly invalidations: RedisInvalidationBus;
  readonly billing: RedisBillingStates;

  /** performance.now() of the last reconnect (0: none since the first connect). */
  private reconnectedAt = 0;
  /** The replay under way, if any; `replayAgain` when another reconnect came meanwhile. */
  private replaying?: Promise<void>;
  private replayAgain = false;

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
    conn.onReconnect(() => {
      reg.reconnectedAt = performance.now();
      reg.requestReplay();
    });
    return reg;
  }

  reconnectedWithin(ms: number): boolean {
    return this.reconnectedAt > 0 && performance.now() - this.reconnectedAt < ms;
  }

  /**
   * Replays after a reconnect, retrying a failed replay (bounded, REPLAY_ATTEMPTS). Reconnects
   * that come during a replay (several cluster nodes back at once) coalesce into one more round.
   */
  private requestReplay(): void {
    if (this.replaying) {
      this.replayAgain = true;
      return;
    }
    this.replaying = (async () => {
      do {
        this.replayAgain = false;
        for (let attempt = 1; attempt <= REPLAY_ATTEMPTS && !this.conn.closed; attempt++) {
          if ((await this.replay()) || attempt === REPLAY_ATTEMPTS) break;
          // A real timer: it waits on a real server. Unref'd: never holds the process open.
          await new Promise((r) => setTimeout(r, backoffDelayMs(attempt, { baseMs: 250, maxMs: 4000, random: () => 0.5 + Math.random() / 2 })).unref());
        }
      } while (this.replayAgain && !this.conn.closed);
    })().finally(() => (this.replaying = undefined));
  }

  /** Writes again everything this process owns (node, sessions and claims, live calls); false when it failed. */
  async replay(): Promise<boolean> {
    const { conn } = this;
    const { node, sessions, calls } = conn.journal.snapshot();
    try {
      if (node) await conn.op(() => this.nodes.writeNode(node.node, node.ttlMs));
      for (let i = 0; i < sessions.length; i += REPLAY_BATCH) {
        await conn.op(() => this.sessions.replay(sessions.slice(i, i + REPLAY_BATCH)));
      }
      for (let i = 0; i < calls.length; i += REPLAY_BATCH) {
        await conn.op(() => Promise.all(calls.slice(i, i + REPLAY_BATCH).map((c) => this.calls.replayCall(c))));
      }
      if (node || sessions.length || calls.length) conn.logger?.info({ node: node?.node.nodeId, sessions: sessions.length, calls: calls.length }, 'registry: replayed owned state after (re)connect');
      return true;
    } catch (err) {
      conn.logger?.warn({ err }, 'registry: replay failed; retried');
      return false;
    }
  }

  async close(): Promise<void> {
    if (this.conn.closed) return;
    this.commands.close();
    this.invalidations.close();
    await this.conn.close();
  }
}
