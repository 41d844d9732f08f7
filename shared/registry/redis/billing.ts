/** Published credit states in Redis: `<prefix>:billing:<workspace id>` (JSON, no expiry). */
import type { BillingState, BillingStates } from '../types.js';
import type { RedisConnection } from './connection.js';

export class RedisBillingStates implements BillingStates {
  constructor(private readonly conn: RedisConnection) {}

  async putBillingState(workspaceId: string, state: BillingState): Promise<void> {
    await this.conn.op(() => this.conn.client.set(this.conn.k('billing', workspaceId), JSON.stringify(state)));
  }

  async getBillingState(workspaceId: string): Promise<BillingState | undefined> {
    const v = await this.conn.op(() => this.conn.client.get(this.conn.k('billing', workspaceId)));
    return v ? (JSON.parse(v) as BillingState) : undefined;
  }
}
