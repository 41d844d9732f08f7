/**
 * Opening Redis for every Redis user of ours (registry, transcript bus) from REDIS_URL:
 *
 * - `redis://` / `rediss://`: one server (node-redis client; a second connection for pub/sub);
 * - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[?db=N]` (and
 *   `rediss+sentinel://` for TLS to the data nodes): Redis Sentinel. node-redis's sentinel client
 *   asks the sentinels for the master, follows failovers, and runs pub/sub on its own connection,
 *   so one client serves both roles. A failover counts as a reconnect: the registry writes again
 *   what it owns, because the promoted replica may lack the last writes.
 *
 * Redis Cluster is not supported: the registry's scripts and transactions span keys of one prefix
 * (docs/operations.md).
 */
import { createClient, createSentinel } from 'redis';
import { backoffDelayMs } from '../../backoff.js';

export type RedisClient = ReturnType<typeof createClient>;

/** Commands waiting for a reply on one connection; beyond it they fail at once (503). */
const MAX_QUEUED_COMMANDS = 10_000;
/** Longest wait for a TCP connection to Redis. */
const CONNECT_TIMEOUT_MS = 2000;
/** Reconnect backoff: ceiling 50 ms doubling, capped, full jitter (so replicas do not reconnect in step). */
const MAX_RECONNECT_DELAY_MS = 2000;
/** Bounds on a sentinel URL (it comes from configuration, still parsed defensively). */
const MAX_SENTINELS = 16;

export interface SentinelTarget {
  name: string;
  sentinels: Array<{ host: string; port: number }>;
  username?: string;
  password?: string;
  database?: number;
  tls: boolean;
}

const SENTINEL_SCHEMES = ['redis+sentinel:', 'rediss+sentinel:'];

export function isSentinelUrl(url: string): boolean {
  return SENTINEL_SCHEMES.some((s) => url.startsWith(`${s}//`));
}

/** Parses a sentinel URL; throws an Error whose message says what is wrong (never echoing the password). */
export function parseSentinelUrl(url: string): SentinelTarget {
  const scheme = SENTINEL_SCHEMES.find((s) => url.startsWith(`${s}//`));
  if (!scheme) throw new Error(`must start with ${SENTINEL_SCHEMES.map((s) => `${s}//`).join(' or ')}`);
  let rest = url.slice(scheme.length + 2);
  let query = '';
  const q = rest.indexOf('?');
  if (q >= 0) [rest, query] = [rest.slice(0, q), rest.slice(q + 1)];
  const slash = rest.indexOf('/');
  if (slash < 0) throw new Error('must name the master after the hosts: .../<master name>');
  const name = decodeURIComponent(rest.slice(slash + 1));
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) throw new Error('the master name must be 1-100 letters, digits, ".", "_" or "-"');
  let hosts = rest.slice(0, slash);
  let username: string | undefined;
  let password: string | undefined;
  const at = hosts.lastIndexOf('@');
  if (at >= 0) {
    const auth = hosts.slice(0, at);
    hosts = hosts.slice(at + 1);
    const colon = auth.indexOf(':');
    username = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth) || undefined;
    password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) || undefined : undefined;
  }
  const list = hosts.split(',');
  if (list.length === 0 || list.length > MAX_SENTINELS || list.some((h) => h === '')) throw new Error(`must list 1-${MAX_SENTINELS} sentinels as host:port separated by commas`);
  const sentinels = list.map((h) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(h);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new Error(`sentinel "${h}" must be host:port`);
    return { host: m[1].replace(/^\[|\]$/g, ''), port };
  });
  const params = new URLSearchParams(query);
  const db = params.get('db');
  if (db !== null && !/^\d{1,2}$/.test(db)) throw new Error('db must be a database number');
  return { name, sentinels, username, password, database: db === null ? undefined : Number(db), tls: scheme === 'rediss+sentinel:' };
}

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

/** A command client and a pub/sub client (the same object under Sentinel), with reconnect hooks. */
export interface RedisClients {
  client: RedisClient;
  sub: RedisClient;
  /** Runs `fn` on every reconnect of the command side after the first connect (and on every failover). */
  onReconnect(fn: () => void): void;
  /** Runs `fn` when pub/sub may have missed messages (its connection came back, or a failover). */
  onSubReconnect(fn: () => void): void;
  /** Closes both without hanging (QUIT when connected, else destroyed; bounded by `timeoutMs`). */
  close(timeoutMs: number): Promise<void>;
}

export async function openRedisClients(url: string): Promise<RedisClients> {
  if (isSentinelUrl(url)) return openSentinel(parseSentinelUrl(url));
  const client = createClient(redisClientOptions(url));
  // A Redis outage must not crash the process: errors surface on the commands instead.
  client.on('error', () => {});
  await client.connect();
  const sub = client.duplicate();
  sub.on('error', () => {});
  await sub.connect();
  return {
    client,
    sub,
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
    sub: client,
    onReconnect: (fn) => void failover.push(fn),
    onSubReconnect: (fn) => void failover.push(fn),
    close: async (timeoutMs) => {
      let timer: NodeJS.Timeout | undefined;
      const closing = sentinel.close().catch(() => {});
      await Promise.race([closing, new Promise((r) => (timer = setTimeout(r, timeoutMs)))]);
      clearTimeout(timer);
      if (sentinel.isOpen) await sentinel.destroy().catch(() => {});
    },
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
