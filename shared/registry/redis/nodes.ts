/**
 * Engine node presence in Redis: `<prefix>:node:<id>` (JSON, TTL) plus the `<prefix>:nodes` set.
 * The two are written by separate single-key commands, never one transaction, so
 * on a Redis Cluster they may live on different slots: a set member whose entry is gone (expired,
 * or its write lost) is pruned by `listNodes`; an entry missing from the set is added again by the
 * next heartbeat.
 */
import type { EngineNode, NodeDirectory } from '../types.js';
import type { RedisConnection } from './connection.js';

export class RedisNodeDirectory implements NodeDirectory {
  constructor(private readonly conn: RedisConnection) {}

  async heartbeat(node: EngineNode, ttlMs: number): Promise<void> {
    this.conn.journal.heartbeat(node, ttlMs);
    await this.conn.op(() => this.writeNode(node, ttlMs));
  }

  /** One node entry (also the replay of this process's node). */
  async writeNode(node: EngineNode, ttlMs: number): Promise<void> {
    const { client } = this.conn;
    // Entry first: a member of the set always has its entry written, so a concurrent listNodes
    // never prunes a node that is just joining.
    await client.set(this.conn.k('node', node.nodeId), JSON.stringify(node), { expiration: { type: 'PX', value: ttlMs } });
    await client.sAdd(this.conn.k('nodes'), node.nodeId);
  }

  async removeNode(nodeId: string): Promise<void> {
    this.conn.journal.removeNode(nodeId);
    const { client } = this.conn;
    await this.conn.op(() => Promise.all([client.del(this.conn.k('node', nodeId)), client.sRem(this.conn.k('nodes'), nodeId)]));
  }

  async listNodes(): Promise<EngineNode[]> {
    const { client } = this.conn;
    return this.conn.op(async () => {
      const ids = await client.sMembers(this.conn.k('nodes'));
      if (ids.length === 0) return [];
      // One GET per node (pipelined), not MGET: the entries may live on different cluster slots.
      const values = await Promise.all(ids.map((id) => client.get(this.conn.k('node', id))));
      const out: EngineNode[] = [];
      const dead: string[] = [];
      values.forEach((v, i) => (v ? out.push(JSON.parse(v) as EngineNode) : dead.push(ids[i]!)));
      if (dead.length) await client.sRem(this.conn.k('nodes'), dead);
      return out;
    });
  }
}
