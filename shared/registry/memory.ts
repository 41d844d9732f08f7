/** In-process registry: the embedded single-node default. Same contract as the Redis one. */
import { type Clock, realClock } from '../clock.js';
import {
  type ClaimResult,
  type CommandHandler,
  type EngineNode,
  type NodeCommand,
  RegistryTimeoutError,
  type SessionRegistry,
  type StoredCall,
  type StoredSession,
} from './types.js';

export class MemoryRegistry implements SessionRegistry {
  readonly kind = 'memory' as const;
  private nodes = new Map<string, { node: EngineNode; expiresAtMs: number }>();
  private sessions = new Map<string, StoredSession>();
  private owners = new Map<string, { nodeId: string; expiresAtMs: number }>();
  private handlers = new Map<string, CommandHandler>();
  private windows = new Map<string, { count: number; endsAtMs: number }>();
  private calls = new Map<string, StoredCall>();
  private callBySid = new Map<string, string>();

  constructor(private readonly clock: Clock = realClock) {}

  async heartbeat(node: EngineNode, ttlMs: number): Promise<void> {
    this.nodes.set(node.nodeId, { node: { ...node }, expiresAtMs: this.clock.now() + ttlMs });
  }
  async removeNode(nodeId: string): Promise<void> {
    this.nodes.delete(nodeId);
  }
  async listNodes(): Promise<EngineNode[]> {
    const now = this.clock.now();
    const out: EngineNode[] = [];
    for (const [id, e] of this.nodes) {
      if (e.expiresAtMs <= now) this.nodes.delete(id);
      else out.push({ ...e.node });
    }
    return out;
  }

  async putSession(session: StoredSession): Promise<void> {
    this.sessions.set(session.sessionId, structuredClone(session));
  }
  async getSession(sessionId: string): Promise<StoredSession | undefined> {
    const s = this.sessions.get(sessionId);
    if (!s) return undefined;
    if (!this.owners.has(sessionId) && s.connectDeadlineMs <= this.clock.now()) {
      this.sessions.delete(sessionId);
      return undefined;
    }
    return structuredClone(s);
  }
  async claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult> {
    const owner = this.owners.get(sessionId);
    if (owner && owner.expiresAtMs > this.clock.now() && owner.nodeId !== nodeId) return { status: 'taken', ownerNodeId: owner.nodeId };
    const session = await this.getSession(sessionId);
    if (!session) return { status: 'not_found' };
    this.owners.set(sessionId, { nodeId, expiresAtMs: this.clock.now() + ttlMs });
    return { status: 'claimed', session };
  }
  async sessionOwner(sessionId: string): Promise<string | undefined> {
    const o = this.owners.get(sessionId);
    return o && o.expiresAtMs > this.clock.now() ? o.nodeId : undefined;
  }
  async deleteSession(sessionId: string): Promise<void> {
    this.sessions.delete(sessionId);
    this.owners.delete(sessionId);
  }

  async serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>> {
    this.handlers.set(nodeId, handler);
    return async () => {
      if (this.handlers.get(nodeId) === handler) this.handlers.delete(nodeId);
    };
  }
  async sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown> {
    const handler = this.handlers.get(nodeId);
    if (!handler) throw new RegistryTimeoutError(nodeId);
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    try {
      return await Promise.race([
        handler(structuredClone(cmd)),
        new Promise((_, reject) => {
          timer = this.clock.setTimeout(() => reject(new RegistryTimeoutError(nodeId)), timeoutMs);
        }),
      ]);
    } finally {
      this.clock.clearTimeout(timer);
    }
  }

  async putCall(call: StoredCall, opts: { seatLimit?: number } = {}): Promise<boolean> {
    const limit = opts.seatLimit ?? 0;
    // Check and take the seat without yielding, so concurrent puts cannot both see a free seat.
    if (limit > 0 && !this.liveCall(call.callId)) {
      let taken = 0;
      for (const id of [...this.calls.keys()]) if (this.liveCall(id)?.poolId === call.poolId) taken++;
      if (taken >= limit) return false;
    }
    this.calls.set(call.callId, structuredClone(call));
    if (call.providerCallSid) this.callBySid.set(call.providerCallSid, call.callId);
    return true;
  }
  async getCall(callId: string): Promise<StoredCall | undefined> {
    const c = this.liveCall(callId);
    return c && structuredClone(c);
  }
  async findCallBySid(providerCallSid: string): Promise<StoredCall | undefined> {
    const id = this.callBySid.get(providerCallSid);
    return id ? this.getCall(id) : undefined;
  }
  async patchCall(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined> {
    const c = this.liveCall(callId);
    if (!c) return undefined;
    Object.assign(c.data, structuredClone(data));
    if (providerCallSid) {
      c.providerCallSid = providerCallSid;
      this.callBySid.set(providerCallSid, callId);
    }
    return structuredClone(c);
  }
  async deleteCall(callId: string): Promise<StoredCall | undefined> {
    const c = this.liveCall(callId);
    if (!c) return undefined;
    this.calls.delete(callId);
    if (c.providerCallSid && this.callBySid.get(c.providerCallSid) === callId) this.callBySid.delete(c.providerCallSid);
    return c;
  }
  async listCalls(by: { userId: string } | { poolId: string }): Promise<StoredCall[]> {
    const out: StoredCall[] = [];
    for (const id of [...this.calls.keys()]) {
      const c = this.liveCall(id);
      if (!c) continue;
      if ('userId' in by ? c.userId === by.userId : c.poolId === by.poolId) out.push(structuredClone(c));
    }
    return out.sort((a, b) => a.createdAtMs - b.createdAtMs);
  }
  private liveCall(callId: string): StoredCall | undefined {
    const c = this.calls.get(callId);
    if (c && c.expiresAtMs <= this.clock.now()) {
      this.calls.delete(callId);
      if (c.providerCallSid) this.callBySid.delete(c.providerCallSid);
      return undefined;
    }
    return c;
  }

  async incrWindow(key: string, windowMs: number): Promise<number> {
    const now = this.clock.now();
    const w = this.windows.get(key);
    if (!w || w.endsAtMs <= now) {
      this.windows.set(key, { count: 1, endsAtMs: now + windowMs });
      if (this.windows.size > 100_000) this.sweepWindows(now);
      return 1;
    }
    w.count++;
    return w.count;
  }

  private sweepWindows(now: number): void {
    for (const [k, w] of this.windows) if (w.endsAtMs <= now) this.windows.delete(k);
  }

  async close(): Promise<void> {
    this.handlers.clear();
  }
}
