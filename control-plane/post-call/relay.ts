/**
 * The post-call relay (issue 14; docs/adr/0003-job-queue.md, "How the control plane learns that a
 * call ended"): moves rows of the `post_call_events` outbox (filled by a trigger on
 * `conversations`, whoever ended the call) into durable jobs.
 *
 * - Each batch is one transaction: `delete ... for update skip locked` + every handler's enqueue
 *   with that transaction, so an event becomes its jobs exactly once even with several control
 *   planes relaying at the same time, and is kept if anything fails (retried on the next kick).
 * - Woken by `pg_notify('post_call_events', <schema>)` from the trigger, and by a sweep every
 *   `sweepMs` on the injected clock (missed notifications; events written while no control plane
 *   was up).
 * - Bounded: `batchSize` events per transaction, batches until the outbox is empty.
 */
import type postgres from 'postgres';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';

export type Tx = postgres.TransactionSql<Record<string, unknown>>;

export interface PostCallEvent {
  conversation_id: string;
  /** The conversation's status when it ended: `completed` or `failed`. */
  status: string;
}

/** Enqueues follow-up jobs with `tx`; throwing rolls the batch back (it is retried). */
export type PostCallHandler = (ev: PostCallEvent, tx: Tx) => Promise<void>;

export interface RelayOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  /** Safety sweep period. Default 5 s. */
  sweepMs?: number;
  /** Events per transaction. Default 100. */
  batchSize?: number;
}

export interface PostCallRelay {
  /** Adds a handler; every event goes to every handler (inside the same transaction). Before `start()` only. */
  on(handler: PostCallHandler): void;
  /** Starts listening and sweeping (handlers must all be registered: events are consumed). */
  start(): Promise<void>;
  /** Drains now; resolves when the outbox was seen empty (tests, shutdown). */
  drain(): Promise<void>;
  close(): Promise<void>;
}

export const POST_CALL_CHANNEL = 'post_call_events';

export async function createPostCallRelay(opts: RelayOptions): Promise<PostCallRelay> {
  const { sql, logger, clock } = opts;
  const batchSize = opts.batchSize ?? 100;
  const handlers: PostCallHandler[] = [];
  const [{ schema }] = await sql<{ schema: string }[]>`select current_schema() as schema`;
  let running: Promise<void> | undefined;
  let again = false;
  let started = false;
  let closed = false;
  let listener: { unlisten(): Promise<void> } | undefined;
  let timer: ReturnType<Clock['setInterval']> | undefined;

  async function drainOnce(): Promise<number> {
    return sql.begin(async (tx) => {
      const rows = await tx<PostCallEvent[]>`
        delete from post_call_events where id in (
          select id from post_call_events order by id limit ${batchSize} for update skip locked)
        returning conversation_id, status`;
      for (const ev of rows) for (const h of handlers) await h(ev, tx);
      return rows.length;
    }) as Promise<number>;
  }

  function kick(): Promise<void> {
    if (closed || !started) return Promise.resolve();
    if (running) {
      again = true;
      return running;
    }
    running = (async () => {
      try {
        do {
          again = false;
          while (!closed && (await drainOnce()) === batchSize);
        } while (again && !closed);
      } catch (err) {
        // Kept in the outbox: the next notification or sweep retries.
        logger.warn({ err }, 'post-call relay failed');
      } finally {
        running = undefined;
      }
    })();
    return running;
  }

  return {
    on(handler) {
      if (started) throw new Error('post-call relay: register handlers before start()');
      handlers.push(handler);
    },
    async start() {
      if (started || closed) return;
      started = true;
      listener = await sql.listen(POST_CALL_CHANNEL, (payload) => {
        if (payload === schema) void kick();
      });
      timer = clock.setInterval(() => void kick(), opts.sweepMs ?? 5000);
      await kick();
    },
    drain: kick,
    async close() {
      if (closed) return;
      closed = true;
      clock.clearInterval(timer);
      await listener?.unlisten().catch(() => {});
      await running;
    },
  };
}
