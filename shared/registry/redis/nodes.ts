/** Engine node presence in Redis: `<prefix>:node:<id>` (JSON, TTL) plus the `<prefix>:nodes` set. */
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
    await this.conn.client
      .multi()
      .set(this.conn.k('node', node.nodeId), JSON.stringify(node), { expiration: { type: 'PX', value: ttlMs } })
      .sAdd(this.conn.k('nodes'), node.nodeId)
      .exec();
  }

  async removeNode(nodeId: string): Promise<void> {
    this.conn.journal.removeNode(nodeId);
    await this.conn.op(() => this.conn.client.multi().del(this.conn.k('node', nodeId)).sRem(this.conn.k('nodes'), nodeId).exec());
  }

  async listNodes(): Promise<EngineNode[]> {
    const { client } = this.conn;
    return this.conn.op(async () => {
      const ids = await client.sMembers(this.conn.k('nodes'));
      if (ids.length === 0) return [];
      const values = await client.mGet(ids.map((id) => this.conn.k('node', id)));
      const out: EngineNode[] = [];
      const dead: string[] = [];
      values.forEach((v, i) => (v ? out.push(JSON.parse(v) as EngineNode) : dead.push(ids[i])));
      if (dead.length) await client.sRem(this.conn.k('nodes'), dead);
      return out;
    });
  }
}
