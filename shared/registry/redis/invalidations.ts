/**
 * Cache invalidations over Redis pub/sub: one channel per registry prefix (`<prefix>:inval`), a
 * message is `<instance>\n<topic>\n<key>`. The publisher's own handlers run at once (before the
 * send, so this replica never serves what it just changed, even with Redis down) and it skips its
 * own echo. Pub/sub is at most once: when the subscriber connection comes back after a drop,
 * notices may have been missed, so every handler gets FLUSH_ALL.
 */
import { randomUUID } from 'node:crypto';
import { FLUSH_ALL, type InvalidationBus, type InvalidationHandler } from '../types.js';
import { deliver } from '../invalidations.js';
import type { RedisConnection } from './connection.js';

export class RedisInvalidationBus implements InvalidationBus {
  private readonly handlers = new Set<InvalidationHandler>();
  private readonly instance = randomUUID();
  private readonly channel: string;
  private subscribed?: Promise<void>;
  private readonly onError = (err: unknown) => this.conn.logger?.error({ err }, 'cache invalidation handler failed');

  constructor(private readonly conn: RedisConnection) {
    this.channel = conn.k('inval');
    // The subscriber is connected already (RedisConnection.open), so every 'ready' is a reconnect:
    // node-redis resubscribes by itself, but what was published meanwhile is gone.
    conn.onSubReconnect(() => deliver(this.handlers, FLUSH_ALL, FLUSH_ALL, this.onError));
  }

  async publish(topic: string, key: string): Promise<boolean> {
    deliver(this.handlers, topic, key, this.onError);
    try {
      await this.conn.op(() => this.conn.publish(this.channel, `${this.instance}\n${topic}\n${key}`));
      return true;
    } catch (err) {
      this.conn.logger?.warn({ err, topic }, 'cache invalidation not sent: other replicas see the change within the cache TTL');
      return false;
    }
  }

  async subscribe(handler: InvalidationHandler): Promise<() => Promise<void>> {
    this.handlers.add(handler);
    try {
      this.subscribed ??= this.conn.subscribe(this.channel, (raw) => this.onMessage(raw));
      await this.subscribed;
    } catch (err) {
      this.handlers.delete(handler);
      this.subscribed = undefined;
      throw err;
    }
    return async () => {
      this.handlers.delete(handler);
    };
  }

  private onMessage(raw: string): void {
    const a = raw.indexOf('\n');
    const b = raw.indexOf('\n', a + 1);
    if (a < 0 || b < 0 || raw.slice(0, a) === this.instance) return;
    deliver(this.handlers, raw.slice(a + 1, b), raw.slice(b + 1), this.onError);
  }

  close(): void {
    this.handlers.clear();
  }
}
