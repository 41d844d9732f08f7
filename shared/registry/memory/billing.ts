/** In-process published credit states (one entry per workspace that has a ledger). */
import type { BillingState, BillingStates } from '../types.js';

export class MemoryBillingStates implements BillingStates {
  private readonly states = new Map<string, BillingState>();

  async putBillingState(workspaceId: string, state: BillingState): Promise<void> {
    this.states.set(workspaceId, { ...state });
  }

  async getBillingState(workspaceId: string): Promise<BillingState | undefined> {
    const s = this.states.get(workspaceId);
    return s && { ...s };
  }
}
