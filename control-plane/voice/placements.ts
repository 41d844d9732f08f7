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
  /** The session placed, to forget it when it ends before a heartbeat would have (`forget`). */
  sessionId: string | undefined;
  atMs: number;
  /** The listing generation current when it was placed. */
  generation: number;
  /** The heartbeat of the first listing fetched after it; undefined until then. */
  baseHeartbeatMs: number | undefined;
}

export class Placements {
  private readonly byNode = new Map<string, Placement[]>();
  /** Placements still counted, by session (only those with one): as bounded as `byNode`. */
  private readonly bySession = new Map<string, { nodeId: string; p: Placement }>();
  /** Incremented as each listing fetch starts; a placement with a lower number preceded that read. */
  private generation = 0;

  /** Call when a listing fetch starts; hand the number to `noteListing` when it answers. */
  beginListing(): number {
    return ++this.generation;
  }

  /** Applies a listing that was fetched after `beginListing` returned `generation`. */
  noteListing(nodes: readonly EngineNode[], generation: number): void {
    for (const [id, list] of this.byNode) {
      if (nodes.some((n) => n.nodeId === id)) continue;
      this.byNode.delete(id);
      for (const p of list) this.unindex(p);
    }
    for (const n of nodes) {
      const list = this.byNode.get(n.nodeId);
      if (!list) continue;
      const kept = list.filter((p) => {
        const covered = (p.baseHeartbeatMs !== undefined && p.baseHeartbeatMs !== n.updatedAtMs) || n.updatedAtMs - p.atMs > STALE_AFTER_MS;
        if (covered) {
          this.unindex(p);
          return false;
        }
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
  add(nodeId: string, atMs: number, sessionId?: string): () => void {
    const p: Placement = { sessionId, atMs, generation: this.generation, baseHeartbeatMs: undefined };
    const list = this.byNode.get(nodeId);
    if (list) list.push(p);
    else this.byNode.set(nodeId, [p]);
    if (sessionId !== undefined) this.bySession.set(sessionId, { nodeId, p });
    return () => this.remove(nodeId, p);
  }

  /**
   * The session ended (here) before a heartbeat covered its placement: it no longer takes a slot.
   * Without this, start-and-end churn (or a node's few slots) saw "at capacity" on an idle node
   * for up to a heartbeat period and STALE_AFTER_MS after each start.
   */
  forget(sessionId: string): void {
    const entry = this.bySession.get(sessionId);
    if (entry) this.remove(entry.nodeId, entry.p);
  }

  private remove(nodeId: string, p: Placement): void {
    const l = this.byNode.get(nodeId);
    const i = l ? l.indexOf(p) : -1;
    if (i >= 0) l!.splice(i, 1);
    if (l && l.length === 0) this.byNode.delete(nodeId);
    this.unindex(p);
  }

  private unindex(p: Placement): void {
    if (p.sessionId !== undefined && this.bySession.get(p.sessionId)?.p === p) this.bySession.delete(p.sessionId);
  }
}
