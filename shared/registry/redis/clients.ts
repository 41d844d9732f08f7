/**
 * Opening Redis for every Redis user of ours (registry, transcript bus) from REDIS_URL (urls.ts):
 *
 * - `redis://` / `rediss://`: one server (node-redis client; a second connection for pub/sub);
 * - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[?db=N]` (and
 *   `rediss+sentinel://` for TLS to the data nodes): Redis Sentinel. node-redis's sentinel client
 *   asks the sentinels for the master, follows failovers, and runs pub/sub on its own connection,
 *   so one client serves both roles. A failover counts as a reconnect: the registry writes again
 *   what it owns, because the promoted replica may lack the last writes.
 * - `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+cluster://`): Redis
 *   Cluster (cluster.ts): sharded pub/sub, a reconnect of any node counts as a reconnect.
 *
 * Pub/sub goes through `publish`/`subscribe` here (not the client's own methods) because the
 * cluster uses the sharded commands.
 */
import { createClient, createSentinel } from 'redis';
import { backoffDelayMs } from '../../backoff.js';
import { AppError } from '../../errors.js';
import { openCluster } from './cluster.js';
import { settleWithin } from './settle.js';
import { isClusterUrl, isSentinelUrl, parseClusterUrl, parseSentinelUrl, type SentinelTarget } from './urls.js';

export { isClusterUrl, isSentinelUrl, parseClusterUrl, parseSentinelUrl, type ClusterTarget, type SentinelTarget } from './urls.js';

export type RedisClient = ReturnType<typeof createClient>;

/** Commands waiting for a reply on one connection; beyond it they fail at once (503). */
const MAX_QUEUED_COMMANDS = 10_000;
/** Longest wait for a TCP connection to Redis. */
const CONNECT_TIMEOUT_MS = 2000;
/** Reconnect backoff: ceiling 50 ms doubling, capped, full jitter (so replicas do not reconnect in step). */
const MAX_RECONNECT_DELAY_MS = 2000;
/** node-redis options of every single-server client of ours. */
export function redisClientOptions(url: string) {
  return { url, ...commonOptions() };
}

function commonOptions() {
  return {
    disableOfflineQueue: true,
    commandsQueueMaxLength: MAX_QUEUED_COMMANDS,
    socket: {
      connectTimeout: CONNECT_TIMEOUT_MS,
      reconnectStrategy: (retries: number) => backoffDelayMs(retries + 1, { baseMs: 50, maxMs: MAX_RECONNECT_DELAY_MS }),
    },
  };
}

type MessageListener = (message: string, channel: string) => void;

/** A command client and pub/sub (its own connection or connections), with reconnect hooks. */
export interface RedisClients {
  client: RedisClient;
  /** False while the command side cannot answer (single server, Sentinel: not connected; Cluster: closed). */
  isReady(): boolean;
  /** False while the subscriber side is not connected (under Sentinel and Cluster: as `isReady`). */
  isSubReady(): boolean;
  /** Resolves with the number of subscribers reached (exact in every mode: Cluster uses SPUBLISH). */
  publish(channel: string, message: string): Promise<number>;
  subscribe(channel: string, listener: MessageListener): Promise<void>;
  unsubscribe(channel: string, listener: MessageListener): Promise<void>;
  /** Runs `fn` on every reconnect of the command side after the first connect (and on every failover). */
  onReconnect(fn: () => void): void;
  /** Runs `fn` when pub/sub may have missed messages (its connection came back, or a failover). */
  onSubReconnect(fn: () => void): void;
  /** Closes both without hanging (QUIT when connected, else destroyed; bounded by `timeoutMs`). */
  close(timeoutMs: number): Promise<void>;
}

/**
 * How long the first connect may take. Later outages are retried for ever (commands fail fast
 * meanwhile), but a process that never reached Redis must say so and stop: the reconnect strategy
 * retries for ever and the clients' errors are swallowed, so a wrong REDIS_URL hung start-up with
 * no line at all.
 */
export const FIRST_CONNECT_TIMEOUT_MS = 15_000;

export async function openRedisClients(url: string, firstConnectTimeoutMs = FIRST_CONNECT_TIMEOUT_MS): Promise<RedisClients> {
  if (isSentinelUrl(url)) return openSentinel(parseSentinelUrl(url));
  if (isClusterUrl(url)) return openCluster(parseClusterUrl(url), commonOptions());
  const client = createClient(redisClientOptions(url));
  // A Redis outage must not crash the process: errors surface on the commands instead.
  let lastError = '';
  client.on('error', (err: Error) => void (lastError = err.message));
  await withinFirstConnect(client.connect(), firstConnectTimeoutMs, () => lastError, () => client.destroy());
  const sub = client.duplicate();
  sub.on('error', (err: Error) => void (lastError = err.message));
  await withinFirstConnect(sub.connect(), firstConnectTimeoutMs, () => lastError, () => (sub.destroy(), client.destroy()));
  return {
    client,
    ...pubSubOf(client, sub),
    onReconnect: (fn) => void client.on('ready', fn),
    onSubReconnect: (fn) => void sub.on('ready', fn),
    close: async (timeoutMs) => void (await Promise.allSettled([shut(sub, timeoutMs), shut(client, timeoutMs)])),
  };
}

async function openSentinel(t: SentinelTarget): Promise<RedisClients> {
  const common = commonOptions();
  const sentinel = createSentinel({
    name: t.name,
    sentinelRootNodes: t.sentinels,
    nodeClientOptions: { ...common, username: t.username, password: t.password, database: t.database, socket: { ...common.socket, tls: t.tls } as never },
    sentinelClientOptions: { socket: { connectTimeout: CONNECT_TIMEOUT_MS } },
  });
  sentinel.on('error', () => {});
  await sentinel.connect();
  const failover: Array<() => void> = [];
  sentinel.on('topology-change', (e: { type?: string }) => {
    if (e?.type === 'MASTER_CHANGE') for (const fn of failover) fn();
  });
  // The sentinel client has the command surface of a client; the registry uses nothing else.
  const client = sentinel as unknown as RedisClient;
  return {
    client,
    ...pubSubOf(client, client),
    onReconnect: (fn) => void failover.push(fn),
    onSubReconnect: (fn) => void failover.push(fn),
    close: async (timeoutMs) => {
      await settleWithin(sentinel.close(), timeoutMs);
      if (sentinel.isOpen) await sentinel.destroy().catch(() => {});
    },
  };
}

/** Classic pub/sub: PUBLISH on the command client, SUBSCRIBE on the subscriber. */
function pubSubOf(client: RedisClient, sub: RedisClient): Pick<RedisClients, 'isReady' | 'isSubReady' | 'publish' | 'subscribe' | 'unsubscribe'> {
  return {
    isReady: () => client.isReady,
    isSubReady: () => sub.isReady,
    publish: (channel, message) => client.publish(channel, message),
    subscribe: async (channel, listener) => void (await sub.subscribe(channel, listener)),
    unsubscribe: async (channel, listener) => void (await sub.unsubscribe(channel, listener)),
  };
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

/** `connecting`, or an error naming REDIS_URL once `ms` pass without a connection (`giveUp` stops the retries). */
async function withinFirstConnect(connecting: Promise<unknown>, ms: number, lastError: () => string, giveUp: () => void): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const deadline = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      giveUp();
      reject(new AppError('SERVICE_UNAVAILABLE', `REDIS_URL: cannot reach Redis within ${ms >= 1000 ? `${Math.round(ms / 1000)} s` : `${ms} ms`}${lastError() ? ` (${lastError()})` : ''}`));
    }, ms);
  });
  connecting.catch(() => {}); // settles after giveUp; the deadline already answered
  try {
    await Promise.race([connecting, deadline]);
  } finally {
    clearTimeout(timer);
  }
}
