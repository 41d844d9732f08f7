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
import { createClient, ErrorReply } from 'redis';
import { type Clock, realClock } from '../../clock.js';
import { backoffDelayMs } from '../../backoff.js';
import type { Logger } from '../../logger.js';
import { RegistryJournal } from '../journal.js';
import { RegistryUnavailableError } from '../types.js';

export type RedisClient = ReturnType<typeof createClient>;

export interface RedisRegistryOptions {
  url: string;
  /** Prefix for every key (tests isolate themselves with one). Default `vp`. */
  prefix?: string;
  clock?: Clock;
  /** Deadline of each registry operation (REDIS_COMMAND_TIMEOUT_MS). Default 1000 ms. */
  commandTimeoutMs?: number;
  /** Reconnects and replays are logged here. */
  logger?: Logger;
}

/** Commands waiting for a reply on one connection; beyond it they fail at once (503). */
const MAX_QUEUED_COMMANDS = 10_000;
/** Longest wait for a TCP connection to Redis. */
const CONNECT_TIMEOUT_MS = 2000;
/** Reconnect backoff: ceiling 50 ms doubling, capped, full jitter (so replicas do not reconnect in step). */
const MAX_RECONNECT_DELAY_MS = 2000;

/** node-redis options of every Redis client of ours (registry, transcript bus). */
export function redisClientOptions(url: string) {
  return {
    url,
    disableOfflineQueue: true,
    commandsQueueMaxLength: MAX_QUEUED_COMMANDS,
    socket: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      reconnectStrategy: (retries: number) => backoffDelayMs(retries + 1, { baseMs: 50, maxMs: MAX_RECONNECT_DELAY_MS }),
    },
  };
}

export class RedisConnection {
  readonly prefix: string;
  readonly clock: Clock;
  readonly logger?: Logger;
  /** What this process wrote and still owns; replayed after a reconnect. */
  readonly journal: RegistryJournal;
  private readonly commandTimeoutMs: number;
  private closedFlag = false;

  private constructor(
    readonly client: RedisClient,
    /** Subscriber connection (pub/sub needs its own). */
    readonly sub: RedisClient,
    opts: RedisRegistryOptions,
  ) {
    this.prefix = opts.prefix ?? 'vp';
    this.clock = opts.clock ?? realClock;
    this.commandTimeoutMs = opts.commandTimeoutMs ?? 1000;
    this.logger = opts.logger;
    this.journal = new RegistryJournal(this.clock);
  }

  static async open(opts: RedisRegistryOptions): Promise<RedisConnection> {
    const client = createClient(redisClientOptions(opts.url));
    // A Redis outage must not crash the process: errors surface on the commands instead.
    client.on('error', () => {});
    await client.connect();
    const sub = client.duplicate();
    sub.on('error', () => {});
    await sub.connect();
    return new RedisConnection(client, sub, opts);
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
    if (!this.client.isReady) throw new RegistryUnavailableError('not connected to Redis');
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
    await Promise.allSettled([shut(this.sub, this.commandTimeoutMs), shut(this.client, this.commandTimeoutMs)]);
  }
}

/**
 * Closes a client without hanging: QUIT only when connected (a client still reconnecting after an
 * outage never answered it: shutdown hung), and destroyed when QUIT gets no answer in time.
 */
async function shut(c: RedisClient, timeoutMs: number): Promise<void> {
  if (!c.isOpen) return;
  if (!c.isReady) return c.destroy();
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([c.quit().catch(() => {}), new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
  clearTimeout(timer);
  if (c.isOpen) c.destroy();
}
