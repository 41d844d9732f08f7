/**
 * Node commands over Redis pub/sub: a channel per node (`<prefix>:cmd:<nodeId>`) and a reply
 * channel per registry instance. Request/reply with a timeout on the injected clock; a command
 * nobody listens to fails at once.
 */
import { randomUUID } from 'node:crypto';
import { type CommandBus, type CommandHandler, type NodeCommand, RegistryTimeoutError, RemoteCommandError } from '../types.js';
import type { RedisConnection } from './connection.js';

interface Envelope {
  id: string;
  replyTo: string;
  cmd?: NodeCommand;
  ok?: boolean;
  result?: unknown;
  error?: { message: string; code: string };
}

export class RedisCommandBus implements CommandBus {
  private readonly replyChannel: string;
  private readonly pending = new Map<string, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  private constructor(private readonly conn: RedisConnection) {
    this.replyChannel = `${conn.prefix}:reply:${randomUUID()}`;
  }

  /** Subscribes the reply channel before the bus is handed out. */
  static async start(conn: RedisConnection): Promise<RedisCommandBus> {
    const bus = new RedisCommandBus(conn);
    await conn.subscribe(bus.replyChannel, (raw) => bus.onReply(raw));
    return bus;
  }

  async serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>> {
    const channel = this.conn.k('cmd', nodeId);
    const listener = (raw: string) => {
      let env: Envelope;
      try {
        env = JSON.parse(raw) as Envelope;
      } catch {
        return;
      }
      if (!env.cmd) return;
      handler(env.cmd).then(
        (result) => this.reply(env, { ok: true, result }),
        (err: unknown) => {
          const e = err as { message?: string; code?: string };
          return this.reply(env, { ok: false, error: { message: e.message ?? 'error', code: e.code ?? 'INTERNAL' } });
        },
      );
    };
    await this.conn.subscribe(channel, listener);
    return async () => {
      if (!this.conn.closed) await this.conn.unsubscribe(channel, listener);
    };
  }

  private async reply(env: Envelope, body: Partial<Envelope>): Promise<void> {
    if (this.conn.closed) return;
    await this.conn.publish(env.replyTo, JSON.stringify({ id: env.id, replyTo: env.replyTo, ...body })).catch(() => {});
  }

  private onReply(raw: string): void {
    let env: Envelope;
    try {
      env = JSON.parse(raw) as Envelope;
    } catch {
      return;
    }
    const p = this.pending.get(env.id);
    if (!p) return;
    this.pending.delete(env.id);
    if (env.ok) p.resolve(env.result);
    else p.reject(new RemoteCommandError(env.error?.message ?? 'remote error', env.error?.code ?? 'INTERNAL'));
  }

  async sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown> {
    const { clock } = this.conn;
    const id = randomUUID();
    return new Promise((resolve, reject) => {
      const timer = clock.setTimeout(() => {
        this.pending.delete(id);
        reject(new RegistryTimeoutError(nodeId));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clock.clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clock.clearTimeout(timer);
          reject(e);
        },
      });
      this.conn.op(() => this.conn.publish(this.conn.k('cmd', nodeId), JSON.stringify({ id, replyTo: this.replyChannel, cmd }))).then(
        (receivers) => {
          // Nobody listening: fail fast instead of waiting for the timeout.
          if (receivers === 0) this.pending.get(id)?.reject(new RegistryTimeoutError(nodeId));
          if (receivers === 0) this.pending.delete(id);
        },
        (err: Error) => {
          this.pending.delete(id);
          clock.clearTimeout(timer);
          reject(err);
        },
      );
    });
  }

  /** A message without a command (its listener ignores it): the count of subscribers it reached. */
  async listening(nodeId: string): Promise<boolean> {
    return (await this.conn.op(() => this.conn.publish(this.conn.k('cmd', nodeId), '{}'))) > 0;
  }

  /** Rejects every command still waiting for a reply (the registry is closing). */
  close(): void {
    for (const p of this.pending.values()) p.reject(new Error('registry closed'));
    this.pending.clear();
  }
}
