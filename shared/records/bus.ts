/**
 * TranscriptBus: live transcript events of one conversation, from the engine's record writer to
 * the control plane's SSE clients. The two halves may be different processes, so: Redis pub/sub
 * when a Redis URL is configured (its own two connections), an in-process emitter otherwise
 * (single process only; both halves must be handed the same instance). LISTEN/NOTIFY is not an
 * option: the embedded database does not deliver notifications.
 *
 * Delivery is best effort and at most once (pub/sub): the durable record is the database. SSE
 * clients replay persisted turns on connect and de-duplicate live ones by turn number.
 */
import { EventEmitter } from 'node:events';
import type { Logger } from '../logger.js';
import { AppError } from '../errors.js';
import { openRedisClients } from '../registry/redis/clients.js';
import type { MessageRow } from './rows.js';

/** One message of a turn, in the API's JSON shape (no `audio_url` on the live stream). */
export type TranscriptMessage = Pick<MessageRow, 'id' | 'conversation_id' | 'turn_number' | 'role' | 'content' | 'tool_calls'> & {
  [field: string]: unknown;
};

export type TranscriptEvent =
  | { type: 'start'; conversation_id: string; session_id: string; agent_id: string; started_at: string }
  | {
      type: 'turn';
      conversation_id: string;
      session_id: string;
      turn_number: number;
      messages: TranscriptMessage[];
      tool_calls: Array<Record<string, unknown>>;
    }
  | {
      type: 'end';
      conversation_id: string;
      session_id: string;
      status: 'completed' | 'failed';
      reason: string;
      total_turns: number;
      total_duration_ms: number;
      avg_response_latency_ms: number;
      ended_at: string;
    };

export type TranscriptListener = (ev: TranscriptEvent) => void;

export interface TranscriptBus {
  readonly kind: 'memory' | 'redis';
  /** Fire and forget: never throws, never blocks the caller on I/O. */
  publish(ev: TranscriptEvent): void;
  /**
   * Resolves once the subscription is live; the returned function unsubscribes. Rejects with 503
   * SERVICE_UNAVAILABLE when the bus cannot subscribe now (Redis down or silent).
   */
  subscribe(conversationId: string, listener: TranscriptListener): Promise<() => Promise<void>>;
  /** Idempotent. */
  close(): Promise<void>;
}

/** Single-process bus. Listeners run on a later tick, never inside the publisher's call stack. */
export function createMemoryTranscriptBus(): TranscriptBus {
  const emitter = new EventEmitter();
  emitter.setMaxListeners(0);
  let closed = false;
  return {
    kind: 'memory',
    publish(ev) {
      if (closed) return;
      setImmediate(() => emitter.emit(ev.conversation_id, ev));
    },
    async subscribe(conversationId, listener) {
      emitter.on(conversationId, listener);
      return async () => {
        emitter.off(conversationId, listener);
      };
    },
    async close() {
      closed = true;
      emitter.removeAllListeners();
    },
  };
}

export interface RedisTranscriptBusOptions {
  url: string;
  /** Channel prefix (tests isolate themselves with one). Default `vp`. */
  prefix?: string;
  logger?: Logger;
  /** Longest wait for a SUBSCRIBE to be confirmed. Default 1000 ms (REDIS_COMMAND_TIMEOUT_MS). */
  commandTimeoutMs?: number;
}

/**
 * Redis pub/sub bus: channel `<prefix>:transcript:<conversation_id>` (sharded on a Redis Cluster,
 * so each conversation's events stay on one shard), payload the event JSON.
 * During a Redis outage (issue 11) publishes are dropped at once (no offline queue: it would grow
 * for the whole outage) and subscribes fail fast with 503; node-redis resubscribes live
 * subscriptions itself after reconnecting.
 */
export async function createRedisTranscriptBus(opts: RedisTranscriptBusOptions): Promise<TranscriptBus> {
  const prefix = opts.prefix ?? 'vp';
  const channel = (id: string) => `${prefix}:transcript:${id}`;
  const commandTimeoutMs = opts.commandTimeoutMs ?? 1000;
  // A Redis outage must not crash the process; publishes fail quietly (the database is the record).
  const clients = await openRedisClients(opts.url);
  let closed = false;
  let lastWarnMs = 0;
  return {
    kind: 'redis',
    publish(ev) {
      if (closed) return;
      // Not connected: rejected at once by node-redis (disableOfflineQueue), warned below.
      clients.publish(channel(ev.conversation_id), JSON.stringify(ev)).catch((err: Error) => {
        const now = Date.now();
        if (now - lastWarnMs > 5000) {
          lastWarnMs = now;
          opts.logger?.warn({ err }, 'transcript publish failed');
        }
      });
    },
    async subscribe(conversationId, listener) {
      const wrapped = (raw: string) => {
        try {
          listener(JSON.parse(raw) as TranscriptEvent);
        } catch (err) {
          opts.logger?.warn({ err }, 'bad transcript event');
        }
      };
      if (closed || !clients.isSubReady()) throw unavailable('not connected to Redis');
      let timer: NodeJS.Timeout | undefined;
      try {
        await Promise.race([
          clients.subscribe(channel(conversationId), wrapped),
          // A real timer: it bounds a real network wait.
          new Promise<never>((_, reject) => {
            timer = setTimeout(() => reject(unavailable(`no answer within ${commandTimeoutMs} ms`)), commandTimeoutMs);
          }),
        ]);
      } catch (err) {
        // A late confirmation must not leave a listener behind.
        void clients.unsubscribe(channel(conversationId), wrapped).catch(() => {});
        throw err instanceof AppError ? err : unavailable((err as Error).message);
      } finally {
        clearTimeout(timer);
      }
      return async () => {
        if (!closed) await clients.unsubscribe(channel(conversationId), wrapped).catch(() => {});
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await clients.close(commandTimeoutMs);
    },
  };
}

function unavailable(reason: string): AppError {
  return new AppError('SERVICE_UNAVAILABLE', `live transcript bus unavailable: ${reason}`, { retryAfterS: 1 });
}

/** Redis when a URL is given, else the in-process bus. */
export async function createTranscriptBus(opts: { redisUrl?: string; prefix?: string; logger?: Logger; commandTimeoutMs?: number }): Promise<TranscriptBus> {
  return opts.redisUrl
    ? createRedisTranscriptBus({ url: opts.redisUrl, prefix: opts.prefix, logger: opts.logger, commandTimeoutMs: opts.commandTimeoutMs })
    : createMemoryTranscriptBus();
}
