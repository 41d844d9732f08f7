/**
 * Redis Cluster (`REDIS_URL=redis+cluster://host:port[,host:port...]`, urls.ts): node-redis's
 * cluster client learns the slot map from the seed nodes, routes each command by its first key
 * and follows MOVED/ASK. What the registry needs beyond that (docs/operations.md, "Redis
 * Cluster"):
 *
 * - Every script and transaction of ours touches the keys of one entity, which share a hash tag
 *   (one slot); work across entities is sent as separate single-slot commands (redis/*.ts).
 * - Pub/sub is sharded (SSUBSCRIBE/SPUBLISH): a channel lives on the shard owning its slot, so
 *   SPUBLISH's receiver count is exact (the command bus fails fast on 0, which classic PUBLISH on
 *   a cluster would get wrong: it counts the receiving node's subscribers only) and messages are
 *   not broadcast over the whole cluster bus.
 * - "Reconnect" means: a connection to any node came back (that node may have restarted empty),
 *   or a node we never saw is now a master (a failover: the promoted replica may lack the last
 *   writes). Either way the registry replays what it owns and caches flush, as under Sentinel.
 */
import { createCluster } from 'redis';
import type { ClusterTarget } from './urls.js';
import type { RedisClient, RedisClients } from './clients.js';
import { settleWithin } from './settle.js';

type Cluster = ReturnType<typeof createCluster>;
/** A node connection of the cluster client: only its readiness and events are used here. */
interface NodeConnection {
  isReady: boolean;
  isOpen: boolean;
  once(event: 'ready', fn: () => void): unknown;
  destroy(): void;
}

export async function openCluster(t: ClusterTarget, nodeOptions: Record<string, unknown> & { socket: Record<string, unknown> }): Promise<RedisClients> {
  const cluster = createCluster({
    rootNodes: t.nodes.map((n) => ({ socket: { host: n.host, port: n.port } })),
    defaults: { ...nodeOptions, username: t.username, password: t.password, socket: { ...nodeOptions.socket, tls: t.tls } } as never,
  });
  // An outage must not crash the process: errors surface on the commands instead.
  cluster.on('error', () => {});
  cluster.on('node-error', () => {});
  await cluster.connect();

  const hooks: Array<() => void> = [];
  const fire = () => {
    for (const fn of hooks) fn();
  };
  // A node connection that drops reconnects by itself; its next 'ready' is a reconnect (the
  // cluster client forwards only the first 'ready' of each connection, so we listen ourselves).
  const armed = new WeakSet<NodeConnection>();
  cluster.on('node-reconnecting', () => {
    for (const c of nodeConnections(cluster)) {
      if (c.isReady || armed.has(c)) continue;
      armed.add(c);
      c.once('ready', () => {
        armed.delete(c);
        fire();
      });
    }
  });
  // A master that was not one a moment ago: the topology changed (failover, a failback to an old
  // master that may lack the last writes, resharding).
  let masters = new Set(cluster.masters.map((m) => m.address));
  cluster.on('node-ready', () => {
    const now = new Set(cluster.masters.map((m) => m.address));
    const changed = [...now].some((a) => !masters.has(a));
    masters = now;
    if (changed) fire();
  });

  // The cluster client has the command surface of a client; the registry uses nothing else.
  const client = cluster as unknown as RedisClient;
  return {
    client,
    // A node that is down fails its own commands at once (no offline queue); the others serve.
    isReady: () => cluster.isOpen,
    isSubReady: () => cluster.isOpen,
    publish: (channel, message) => cluster.sPublish(channel, message),
    subscribe: async (channel, listener) => void (await cluster.sSubscribe(channel, listener)),
    unsubscribe: async (channel, listener) => void (await cluster.sUnsubscribe(channel, listener)),
    onReconnect: (fn) => void hooks.push(fn),
    onSubReconnect: (fn) => void hooks.push(fn),
    close: async (timeoutMs) => {
      // close() stops every node connection's reconnect loop at once and waits only for replies
      // still in flight; a silent node would hold it, so the wait is bounded and what is still
      // open then is destroyed (close() forgets its nodes at once: they are taken first).
      const conns = nodeConnections(cluster);
      await settleWithin(cluster.close(), timeoutMs);
      for (const c of conns) if (c.isOpen) c.destroy();
    },
  };
}

/** Every live connection of the cluster client: per master, its sharded pub/sub connection too. */
function nodeConnections(cluster: Cluster): NodeConnection[] {
  const out: NodeConnection[] = [];
  for (const m of cluster.masters) {
    if (m.client && 'isReady' in m.client) out.push(m.client as unknown as NodeConnection);
    if (m.pubSub?.client) out.push(m.pubSub.client as unknown as NodeConnection);
  }
  return out;
}
