/**
 * What this process has written to the shared registry and still owns: its engine node, the
 * sessions it started or claimed, the live calls it placed or carries. Redis is a cache of that
 * state spread over the processes; when Redis comes back empty (restart without persistence,
 * failover to an empty replica) every process writes its own part again (RedisRegistry replays
 * on each `ready`), so live calls can still be ended and injected into.
 *
 * Bounded: entries leave when deleted or expired, and each map holds at most `maxEntries`
 * (beyond it the oldest entry is forgotten: that one is not replayed, nothing else breaks).
 */
import type { Clock } from '../clock.js';
import type { EngineNode, StoredCall, StoredSession } from './types.js';

export interface JournalSession {
  session: StoredSession;
  /** Set once this process claimed it: the owner key is replayed too. */
  owner?: { nodeId: string; expiresAtMs: number };
}

export interface JournalCall {
  call: StoredCall;
  /** Kept for a call this process carries (`adopt`) rather than placed: `release` drops only those. */
  adoptedOnly?: boolean;
}

export class RegistryJournal {
  private node: { node: EngineNode; ttlMs: number; atMs: number } | undefined;
  private readonly sessions = new Map<string, JournalSession>();
  private readonly calls = new Map<string, JournalCall>();

  constructor(
    private readonly clock: Clock,
    private readonly maxEntries = 100_000,
  ) {}

  heartbeat(node: EngineNode, ttlMs: number): void {
    this.node = { node: { ...node }, ttlMs, atMs: this.clock.now() };
  }
  removeNode(nodeId: string): void {
    if (this.node?.node.nodeId === nodeId) this.node = undefined;
  }

  putSession(session: StoredSession): void {
    const prev = this.sessions.get(session.sessionId);
    this.sweepSome();
    this.bounded(this.sessions).set(session.sessionId, { session, owner: prev?.owner });
  }
  claimed(session: StoredSession, nodeId: string, ttlMs: number): void {
    this.sweepSome();
    this.bounded(this.sessions).set(session.sessionId, { session, owner: { nodeId, expiresAtMs: this.clock.now() + ttlMs } });
  }
  deleteSession(sessionId: string): void {
    this.sessions.delete(sessionId);
  }

  putCall(call: StoredCall): void {
    this.sweepSome();
    this.bounded(this.calls).set(call.callId, { call });
  }
  /** A call this process carries (an engine node with its media); a call it placed itself stays placed. */
  adoptCall(call: StoredCall): void {
    if (this.calls.has(call.callId)) return this.updateCall(call);
    this.sweepSome();
    this.bounded(this.calls).set(call.callId, { call, adoptedOnly: true });
  }
  /** This process no longer carries the call: forgotten unless it placed it (one process can do both, ROLE=all). */
  releaseCall(callId: string): void {
    if (this.calls.get(callId)?.adoptedOnly) this.calls.delete(callId);
  }

  /**
   * Expired entries go on every write, a few at a time, not only at a reconnect or when a map is
   * full: sessions that never connect (a control plane alone never sees their end) would otherwise
   * keep whole session configs in memory until the cap. Each write looks at the oldest
   * SWEEP_PER_WRITE entries of each map: expired ones are dropped, live ones rotate to the back,
   * so every entry is looked at again within `size / SWEEP_PER_WRITE` writes.
   */
  private sweepSome(): void {
    const now = this.clock.now();
    rotateExpired(this.sessions, (s) => sessionExpiresAtMs(s) <= now);
    rotateExpired(this.calls, (c) => c.call.expiresAtMs <= now);
  }
  /** Refreshes a call this process journals already; calls it does not own stay out. */
  updateCall(call: StoredCall): void {
    const entry = this.calls.get(call.callId);
    if (entry) this.calls.set(call.callId, { ...entry, call });
  }
  deleteCall(callId: string): void {
    this.calls.delete(callId);
  }

  /** The live part, expired entries dropped: what to write again. */
  snapshot(): { node?: { node: EngineNode; ttlMs: number }; sessions: JournalSession[]; calls: StoredCall[] } {
    this.prune();
    const now = this.clock.now();
    const node = this.node && now - this.node.atMs < this.node.ttlMs ? { node: { ...this.node.node, updatedAtMs: now }, ttlMs: this.node.ttlMs } : undefined;
    return { node, sessions: [...this.sessions.values()], calls: [...this.calls.values()].map((c) => c.call) };
  }

  get size(): { sessions: number; calls: number } {
    return { sessions: this.sessions.size, calls: this.calls.size };
  }

  private prune(): void {
    const now = this.clock.now();
    for (const [id, s] of this.sessions) if (sessionExpiresAtMs(s) <= now) this.sessions.delete(id);
    for (const [id, c] of this.calls) if (c.call.expiresAtMs <= now) this.calls.delete(id);
  }

  /** Makes room for one more entry: expired ones first, then the oldest. */
  private bounded<V>(map: Map<string, V>): Map<string, V> {
    if (map.size < this.maxEntries) return map;
    this.prune();
    while (map.size >= this.maxEntries) map.delete(map.keys().next().value as string);
    return map;
  }
}

const SWEEP_PER_WRITE = 4;

function rotateExpired<V>(map: Map<string, V>, expired: (v: V) => boolean): void {
  let n = Math.min(SWEEP_PER_WRITE, map.size);
  for (const [k, v] of map) {
    if (n-- <= 0) break;
    map.delete(k);
    if (!expired(v)) map.set(k, v);
  }
}

/** A claimed session lives as long as its claim; an unclaimed one until its connect deadline. */
export function sessionExpiresAtMs(s: JournalSession): number {
  return s.owner ? s.owner.expiresAtMs : s.session.connectDeadlineMs;
}
