/** In-process live calls with seats per pool and the carrier sid index; expired calls vanish on read. */
import type { LiveCallStore, StoredCall } from '../types.js';
import type { MemorySweep, Sweepable } from './sweep.js';

export class MemoryLiveCallStore implements LiveCallStore, Sweepable {
  private readonly calls = new Map<string, StoredCall>();
  private readonly callBySid = new Map<string, string>();

  constructor(private readonly sweeper: MemorySweep) {}

  get sizes(): { calls: number; callSids: number } {
    return { calls: this.calls.size, callSids: this.callBySid.size };
  }

  sweep(): void {
    for (const id of [...this.calls.keys()]) this.liveCall(id);
    for (const [sid, id] of this.callBySid) if (!this.calls.has(id)) this.callBySid.delete(sid);
  }

  async putCall(call: StoredCall, opts: { seatLimit?: number } = {}): Promise<boolean> {
    this.sweeper.maybeSweep();
    this.sweeper.room(this.calls, call.callId, 'calls');
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

  /** One process: nothing to replay. */
  async adoptCall(): Promise<void> {}
  releaseCall(): void {}

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

  async patchCallIfEmpty(callId: string, field: string, data: Record<string, unknown>): Promise<StoredCall | 'taken' | undefined> {
    const c = this.liveCall(callId);
    if (!c) return undefined;
    const current = c.data[field];
    if (current !== undefined && current !== null && current !== '') return 'taken';
    return this.patchCall(callId, data);
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

  /** The call if it has not expired; an expired one is removed with its sid entry. */
  private liveCall(callId: string): StoredCall | undefined {
    const c = this.calls.get(callId);
    if (c && c.expiresAtMs <= this.sweeper.clock.now()) {
      this.calls.delete(callId);
      if (c.providerCallSid) this.callBySid.delete(c.providerCallSid);
      return undefined;
    }
    return c;
  }
}
