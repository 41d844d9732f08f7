/** In-process node presence: entries expire `ttlMs` after the last heartbeat. */
import type { EngineNode, NodeDirectory } from '../types.js';
import type { MemorySweep, Sweepable } from './sweep.js';

export class MemoryNodeDirectory implements NodeDirectory, Sweepable {
  private readonly nodes = new Map<string, { node: EngineNode; expiresAtMs: number }>();

  constructor(private readonly sweeper: MemorySweep) {}

  get size(): number {
    return this.nodes.size;
  }

  sweep(nowMs: number): void {
    for (const [id, e] of this.nodes) if (e.expiresAtMs <= nowMs) this.nodes.delete(id);
  }

  async heartbeat(node: EngineNode, ttlMs: number): Promise<void> {
    this.sweeper.maybeSweep();
    this.nodes.set(node.nodeId, { node: { ...node }, expiresAtMs: this.sweeper.clock.now() + ttlMs });
  }

  async removeNode(nodeId: string): Promise<void> {
    this.nodes.delete(nodeId);
  }

  async listNodes(): Promise<EngineNode[]> {
    const now = this.sweeper.clock.now();
    const out: EngineNode[] = [];
    for (const [id, e] of this.nodes) {
      if (e.expiresAtMs <= now) this.nodes.delete(id);
      else out.push({ ...e.node });
    }
    return out;
  }
}
