/** Rate-limit windows in Redis: `<prefix>:rl:<key>`, INCR with the expiry set by the first hit. */
import type { RateLimitWindows } from '../types.js';
import type { RedisConnection } from './connection.js';

export class RedisRateLimitWindows implements RateLimitWindows {
  constructor(private readonly conn: RedisConnection) {}

  async incrWindow(key: string, windowMs: number): Promise<number> {
    const k = this.conn.k('rl', key);
    const [count] = (await this.conn.op(() => this.conn.client.multi().incr(k).pExpire(k, windowMs, 'NX').exec())) as unknown as [number];
    return Number(count);
  }
}
