/**
 * The sessions one control-plane replica placed on engine nodes that the nodes' heartbeats may not
 * count yet. A heartbeat's `load` lags: without these, a burst of starts (a campaign) would all
 * land on the same "least-loaded" node and past its capacity.
 *
 * When is a placement inside a node's load? Not by comparing clocks alone. A placement made before
 * a listing was fetched is "based" on the heartbeat that listing showed; any later heartbeat was
 * written after that read, so after the placement, and counts it (its prewarm reached the node
 * within milliseconds). That rule needs no clock, but forgets slowly after a quiet spell (the next
 * change is awaited), so a heartbeat stamped STALE_AFTER_MS after a placement also covers it:
 * generous enough for any NTP-synchronised pair of hosts.
 */
import type { EngineNode } from '../../shared/registry/index.js';

export const STALE_AFTER_MS = 2_000;

interface Placement {
  atMs: number;
  /** The listing generation current when it was placed. */
  generation: number;
  /** The heartbeat of the first listing fetched after it; undefined until then. */
  baseHeartbeatMs: number | undefined;
}

export class Placements {
  private readonly byNode = new Map<string, Placement[]>();
  /** Incremented as each listing fetch starts; a placement with a lower number preceded that read. */
  private generation = 0;

  /** Call when a listing fetch starts; hand the number to `noteListing` when it answers. */
  beginListing(): number {
    return ++this.generation;
  }

  /** Applies a listing that was fetched after `beginListing` returned `generation`. */
  noteListing(nodes: readonly EngineNode[], generation: number): void {
    for (const id of this.byNode.keys()) if (!nodes.some((n) => n.nodeId === id)) this.byNode.delete(id);
    for (const n of nodes) {
      const list = this.byNode.get(n.nodeId);
      if (!list) continue;
      const kept = list.filter((p) => {
        if (p.baseHeartbeatMs !== undefined && p.baseHeartbeatMs !== n.updatedAtMs) return false;
        if (n.updatedAtMs - p.atMs > STALE_AFTER_MS) return false;
        if (p.baseHeartbeatMs === undefined && p.generation < generation) p.baseHeartbeatMs = n.updatedAtMs;
        return true;
      });
      if (kept.length) this.byNode.set(n.nodeId, kept);
      else this.byNode.delete(n.nodeId);
    }
  }

  /** The node as the picker should see it: its heartbeat load plus placements not in it. */
  withPending(n: EngineNode): EngineNode {
    const count = this.byNode.get(n.nodeId)?.length ?? 0;
    return count ? { ...n, load: n.load + count } : n;
  }

  /** Records a placement; made in the same synchronous step as the pick so concurrent starts see it. Returns its undo. */
  add(nodeId: string, atMs: number): () => void {
    const p: Placement = { atMs, generation: this.generation, baseHeartbeatMs: undefined };
    const list = this.byNode.get(nodeId);
    if (list) list.push(p);
    else this.byNode.set(nodeId, [p]);
    return () => {
      const l = this.byNode.get(nodeId);
      const i = l ? l.indexOf(p) : -1;
      if (i >= 0) l!.splice(i, 1);
    };
  }
}
