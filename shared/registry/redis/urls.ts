/**
 * The two multi-host REDIS_URL forms (they come from configuration, still parsed defensively; an
 * error message never echoes the password):
 *
 * - `redis+sentinel://[user:password@]host:port[,host:port...]/<master name>[?db=N]`
 *   (`rediss+sentinel://`: TLS to the data nodes);
 * - `redis+cluster://[user:password@]host:port[,host:port...]` (`rediss+cluster://`: TLS): seed
 *   nodes of a Redis Cluster; the client learns the rest of the topology from any of them.
 */

/** Bound on the hosts one URL may list. */
const MAX_HOSTS = 16;

export interface HostPort {
  host: string;
  port: number;
}

export interface SentinelTarget {
  name: string;
  sentinels: HostPort[];
  username?: string;
  password?: string;
  database?: number;
  tls: boolean;
}

export interface ClusterTarget {
  nodes: HostPort[];
  username?: string;
  password?: string;
  tls: boolean;
}

const SENTINEL_SCHEMES = ['redis+sentinel:', 'rediss+sentinel:'];
const CLUSTER_SCHEMES = ['redis+cluster:', 'rediss+cluster:'];

export function isSentinelUrl(url: string): boolean {
  return SENTINEL_SCHEMES.some((s) => url.startsWith(`${s}//`));
}

export function isClusterUrl(url: string): boolean {
  return CLUSTER_SCHEMES.some((s) => url.startsWith(`${s}//`));
}

/** Parses a sentinel URL; throws an Error whose message says what is wrong. */
export function parseSentinelUrl(url: string): SentinelTarget {
  const scheme = SENTINEL_SCHEMES.find((s) => url.startsWith(`${s}//`));
  if (!scheme) throw new Error(`must start with ${SENTINEL_SCHEMES.map((s) => `${s}//`).join(' or ')}`);
  const { rest, query } = splitQuery(url.slice(scheme.length + 2));
  const slash = rest.indexOf('/');
  if (slash < 0) throw new Error('must name the master after the hosts: .../<master name>');
  const name = decodeURIComponent(rest.slice(slash + 1));
  if (!/^[A-Za-z0-9._-]{1,100}$/.test(name)) throw new Error('the master name must be 1-100 letters, digits, ".", "_" or "-"');
  const { username, password, hosts } = parseHosts(rest.slice(0, slash), 'sentinel');
  const params = new URLSearchParams(query);
  const db = params.get('db');
  if (db !== null && !/^\d{1,2}$/.test(db)) throw new Error('db must be a database number');
  return { name, sentinels: hosts, username, password, database: db === null ? undefined : Number(db), tls: scheme === 'rediss+sentinel:' };
}

/** Parses a cluster URL; throws an Error whose message says what is wrong. */
export function parseClusterUrl(url: string): ClusterTarget {
  const scheme = CLUSTER_SCHEMES.find((s) => url.startsWith(`${s}//`));
  if (!scheme) throw new Error(`must start with ${CLUSTER_SCHEMES.map((s) => `${s}//`).join(' or ')}`);
  const { rest, query } = splitQuery(url.slice(scheme.length + 2));
  // A cluster has database 0 only: a path or a query is a mistake, not something to ignore.
  if (query !== '') throw new Error('takes no options (a cluster has database 0 only)');
  const hostPart = rest.endsWith('/') ? rest.slice(0, -1) : rest;
  if (hostPart.includes('/')) throw new Error('takes no path: list the seed nodes as host:port separated by commas');
  const { username, password, hosts } = parseHosts(hostPart, 'node');
  return { nodes: hosts, username, password, tls: scheme === 'rediss+cluster:' };
}

function splitQuery(s: string): { rest: string; query: string } {
  const q = s.indexOf('?');
  return q < 0 ? { rest: s, query: '' } : { rest: s.slice(0, q), query: s.slice(q + 1) };
}

/** `[user:password@]host:port[,host:port...]` */
function parseHosts(s: string, what: string): { username?: string; password?: string; hosts: HostPort[] } {
  let hostList = s;
  let username: string | undefined;
  let password: string | undefined;
  const at = s.lastIndexOf('@');
  if (at >= 0) {
    const auth = s.slice(0, at);
    hostList = s.slice(at + 1);
    const colon = auth.indexOf(':');
    username = decodeURIComponent(colon >= 0 ? auth.slice(0, colon) : auth) || undefined;
    password = colon >= 0 ? decodeURIComponent(auth.slice(colon + 1)) || undefined : undefined;
  }
  const list = hostList.split(',');
  if (list.length > MAX_HOSTS || list.some((h) => h === '')) throw new Error(`must list 1-${MAX_HOSTS} ${what}s as host:port separated by commas`);
  const hosts = list.map((h) => {
    const m = /^(\[[0-9a-fA-F:.]+\]|[A-Za-z0-9.-]+):(\d{1,5})$/.exec(h);
    const port = m ? Number(m[2]) : 0;
    if (!m || port < 1 || port > 65535) throw new Error(`${what} "${h}" must be host:port`);
    return { host: m[1]!.replace(/^\[|\]$/g, ''), port };
  });
  return { username, password, hosts };
}
