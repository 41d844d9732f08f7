/**
 * The one Redis connection every Redis registry part shares: a command client, a subscriber
 * client, the key prefix, the deadline on every operation, and the replay journal.
 *
 * Outages (issue 11, "Redis outage hangs the API"): no offline queue, a bounded command queue and
 * a deadline on every operation, so while Redis is down or silent each call fails within
 * `commandTimeoutMs` with RegistryUnavailableError (503, Retry-After). node-redis reconnects with
 * a capped backoff and resubscribes its channels itself; on every `ready` the registry writes
 * again what this process owns (`journal.ts`, `index.ts` `replay`), so a Redis that came back
 * empty knows the live calls again.
 */
import { ErrorReply } from 'redis';
import { type Clock, realClock } from '../../clock.js';
import type { Logger } from '../../logger.js';
import { RegistryJournal } from '../journal.js';
import { RegistryUnavailableError } from '../types.js';
import { openRedisClients, type RedisClient, type RedisClients } from './clients.js';

export { redisClientOptions, type RedisClient } from './clients.js';

export interface RedisRegistryOptions {
  /** REDIS_URL: one server (`redis://`, `rediss://`), Sentinel (`redis+sentinel://`) or Cluster (`redis+cluster://`), see urls.ts. */
  url: string;
  /** Prefix for every key (tests isolate themselves with one). Default `vp`. */
  prefix?: string;
  clock?: Clock;
  /** Deadline of each registry operation (REDIS_COMMAND_TIMEOUT_MS). Default 1000 ms. */
  commandTimeoutMs?: number;
  /** Reconnects and replays are logged here. */
  logger?: Logger;
}

export class RedisConnection {
  readonly prefix: string;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** What this process wrote and still owns; replayed after a reconnect. */
  readonly journal: RegistryJournal;
  private readonly commandTimeoutMs: number;
  private closedFlag = false;

  readonly client: RedisClient;

  private constructor(
    private readonly clients: RedisClients,
    opts: RedisRegistryOptions,
  ) {
    this.client = clients.client;
    this.prefix = opts.prefix ?? 'vp';
    this.clock = opts.clock ?? realClock;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 1000;
    this.logger = opts.logger;
    this.journal = new RegistryJournal(this.clock);
  }

  static async open(opts: RedisRegistryOptions): Promise<RedisConnection> {
    return new RedisConnection(await openRedisClients(opts.url), opts);
  }

  /** `fn` runs on every reconnect (or Sentinel failover) of the command connection. */
  onReconnect(fn: () => void): void {
    this.clients.onReconnect(fn);
  }

  /** PUBLISH (SPUBLISH on a cluster); resolves with the number of subscribers reached. */
  publish(channel: string, message: string): Promise<number> {
    return this.clients.publish(channel, message);
  }

  /** SUBSCRIBE (SSUBSCRIBE on a cluster) on the subscriber connection. */
  subscribe(channel: string, listener: (message: string) => void): Promise<void> {
    return this.clients.subscribe(channel, listener);
  }

  unsubscribe(channel: string, listener: (message: string) => void): Promise<void> {
    return this.clients.unsubscribe(channel, listener);
  }

  /** `fn` runs when pub/sub may have missed messages (its connection came back, or a failover). */
  onSubReconnect(fn: () => void): void {
    this.clients.onSubReconnect(fn);
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  /** `<prefix>:<part>:...` */
  k(...parts: string[]): string {
    return [this.prefix, ...parts].join(':');
  }

  /**
   * Runs one registry operation against Redis within the deadline. Connection trouble of any
   * kind becomes RegistryUnavailableError; Redis's own error replies (a bug) pass unchanged.
   */
  async op<T>(fn: () => Promise<T>): Promise<T> {
    if (this.closedFlag) throw new RegistryUnavailableError('registry closed');
    if (!this.clients.isReady()) throw new RegistryUnavailableError('not connected to Redis');
    let timer: NodeJS.Timeout | undefined;
    try {
      return await Promise.race([
        fn(),
        // A real timer (not the injected Clock): it bounds a real network wait.
        new Promise<never>((_, reject) => {
          timer = setTimeout(() => reject(new RegistryUnavailableError(`no answer from Redis within ${this.commandTimeoutMs} ms`)), this.commandTimeoutMs);
        }),
      ]);
    } catch (err) {
      if (err instanceof RegistryUnavailableError || err instanceof ErrorReply) throw err;
      throw new RegistryUnavailableError((err as Error)?.message ?? String(err), err);
    } finally {
      clearTimeout(timer);
    }
  }

  async close(): Promise<void> {
    if (this.closedFlag) return;
    this.closedFlag = true;
    await this.clients.close(this.commandTimeoutMs);
  }
}
