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
import { createClient } from 'redis';
import type { Logger } from '../../shared/logger.js';

/** One message of a turn, in the API's JSON shape (no `audio_url` on the live stream). */
export interface TranscriptMessage {
  id: string;
  conversation_id: string;
  turn_number: number;
  role: 'user' | 'assistant';
  content: string;
  tool_calls: Array<{ id: string; name: string }>;
  [field: string]: unknown;
}

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
  /** Resolves once the subscription is live; the returned function unsubscribes. */
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
}

/** Redis pub/sub bus: channel `<prefix>:transcript:<conversation_id>`, payload the event JSON. */
export async function createRedisTranscriptBus(opts: RedisTranscriptBusOptions): Promise<TranscriptBus> {
  const prefix = opts.prefix ?? 'vp';
  const channel = (id: string) => `${prefix}:transcript:${id}`;
  const pub = createClient({ url: opts.url, socket: { connectTimeout: 5000, reconnectStrategy: (n) => Math.min(n * 100, 2000) } });
  // A Redis outage must not crash the process; publishes fail quietly (the database is the record).
  pub.on('error', () => {});
  await pub.connect();
  const sub = pub.duplicate();
  sub.on('error', () => {});
  await sub.connect();
  let closed = false;
  let lastWarnMs = 0;
  return {
    kind: 'redis',
    publish(ev) {
      if (closed) return;
      pub.publish(channel(ev.conversation_id), JSON.stringify(ev)).catch((err: Error) => {
        const now = Date.now();
        if (now - lastWarnMs > 5000) {
          lastWarnMs = now;
          opts.logger?.warn({ err: err.message }, 'transcript publish failed');
        }
      });
    },
    async subscribe(conversationId, listener) {
      const wrapped = (raw: string) => {
        try {
          listener(JSON.parse(raw) as TranscriptEvent);
        } catch (err) {
          opts.logger?.warn({ err: (err as Error).message }, 'bad transcript event');
        }
      };
      await sub.subscribe(channel(conversationId), wrapped);
      return async () => {
        if (!closed) await sub.unsubscribe(channel(conversationId), wrapped).catch(() => {});
      };
    },
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([sub.quit(), pub.quit()]);
    },
  };
}

/** Redis when a URL is given, else the in-process bus. */
export async function createTranscriptBus(opts: { redisUrl?: string; prefix?: string; logger?: Logger }): Promise<TranscriptBus> {
  return opts.redisUrl ? createRedisTranscriptBus({ url: opts.redisUrl, prefix: opts.prefix, logger: opts.logger }) : createMemoryTranscriptBus();
}
