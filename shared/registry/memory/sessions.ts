/**
 * In-process sessions and claims. Unclaimed: gone at the connect deadline. Claimed: gone when the
 * claim expires (as in Redis, where the claim re-arms the config's TTL).
 */
import { type ClaimResult, MAX_PENDING_LISTED, type SessionStore, type StoredSession } from '../types.js';
import type { MemorySweep, Sweepable } from './sweep.js';

export class MemorySessionStore implements SessionStore, Sweepable {
  private readonly sessions = new Map<string, StoredSession>();
  private readonly owners = new Map<string, { nodeId: string; expiresAtMs: number }>();

  constructor(private readonly sweeper: MemorySweep) {}

  get sizes(): { sessions: number; owners: number } {
    return { sessions: this.sessions.size, owners: this.owners.size };
  }

  sweep(nowMs: number): void {
    for (const [id, o] of this.owners) if (o.expiresAtMs <= nowMs) this.owners.delete(id);
    for (const [id, s] of this.sessions) if (this.expired(id, s, nowMs)) this.sessions.delete(id);
  }

  private expired(id: string, s: StoredSession, now: number): boolean {
    const owner = this.owners.get(id);
    if (owner && owner.expiresAtMs > now) return false;
    return owner !== undefined || s.connectDeadlineMs <= now;
  }

  async putSession(session: StoredSession): Promise<void> {
    this.sweeper.maybeSweep();
    this.sweeper.room(this.sessions, session.sessionId, 'sessions');
    this.sessions.set(session.sessionId, structuredClone(session));
  }

  async getSession(sessionId: string): Promise<StoredSession | undefined> {
    const s = this.sessions.get(sessionId);
    if (!s) return undefined;
    if (this.expired(sessionId, s, this.sweeper.clock.now())) {
      this.sessions.delete(sessionId);
      this.owners.delete(sessionId);
      return undefined;
    }
    return structuredClone(s);
  }

  async claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult> {
    const { clock } = this.sweeper;
    const owner = this.owners.get(sessionId);
    if (owner && owner.expiresAtMs > clock.now() && owner.nodeId !== nodeId) return { status: 'taken', ownerNodeId: owner.nodeId };
    const session = await this.getSession(sessionId);
    if (!session) return { status: 'not_found' };
    this.owners.set(sessionId, { nodeId, expiresAtMs: clock.now() + ttlMs });
    return { status: 'claimed', session };
  }

  async sessionOwner(sessionId: string): Promise<string | undefined> {
    const o = this.owners.get(sessionId);
    return o && o.expiresAtMs > this.sweeper.clock.now() ? o.nodeId : undefined;
  }

  async extendConnectDeadline(sessionId: string, deadlineMs: number): Promise<boolean> {
    const s = this.sessions.get(sessionId);
    if (!s || this.owners.has(sessionId) || this.expired(sessionId, s, this.sweeper.clock.now()) || s.connectDeadlineMs >= deadlineMs) return false;
    s.connectDeadlineMs = deadlineMs;
    return true;
  }

  async pendingOn(nodeId: string): Promise<string[]> {
    const now = this.sweeper.clock.now();
    const waiting = [...this.sessions.values()].filter((s) => s.nodeId === nodeId && !this.owners.has(s.sessionId) && s.connectDeadlineMs > now);
    return waiting
      .sort((a, b) => b.connectDeadlineMs - a.connectDeadlineMs)
      .slice(0, MAX_PENDING_LISTED)
      .map((s) => s.sessionId);
  }

  async deleteSession(sessionId: string): Promise<void> {
    this.sessions.delete(sessionId);
    this.owners.delete(sessionId);
  }
}
