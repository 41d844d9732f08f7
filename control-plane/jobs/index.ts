/**
 * The control plane's one durable job queue (issue 14; docs/adr/0003-job-queue.md): pg-boss over
 * our postgres.js pool (its `db.executeSql` adapter, no second pool), in its own schema.
 *
 * - Every control-plane replica works every queue; pg-boss hands a job to one of them
 *   (`SKIP LOCKED`). Delivery is AT LEAST ONCE: a job whose process died mid-run is failed by the
 *   supervisor when its `expireInSeconds` passes and retried. Handlers must be idempotent.
 * - Retries with backoff, delayed jobs (`startAfter`), singleton keys (queues use the `stately`
 *   policy: at most one queued and one running job per key) and visible state (`state()`, and
 *   the `<schema>.job` table itself).
 * - The media engine never imports this module: jobs never run on the audio path.
 */
import { setMaxListeners } from 'node:events';
import PgBoss from 'pg-boss';
import type postgres from 'postgres';
import { realClock, sleepOn } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { AppError } from '../../shared/errors.js';
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import { type JobName, type JobPayloads } from './names.js';

export type { JobName, JobPayloads } from './names.js';

export interface QueueSettings {
  /** Retries after the first attempt. */
  retryLimit: number;
  /** First retry delay in seconds. With `retryBackoff`, pg-boss doubles it per retry with equal jitter, computed in SQL (pg-boss src/plans.js), so these queues need no backoff of ours. */
  retryDelaySeconds: number;
  retryBackoff: boolean;
  /** A running job older than this is failed (and retried): bounds the loss of a crashed process. */
  expireInSeconds: number;
}

/** Per-queue defaults; `enqueue` options override retries per job. */
export const QUEUE_SETTINGS: Record<JobName, QueueSettings> = {
  // LLM outages are usually short: 3 retries over ~1.5 min, then `summary_status = failed`.
  'post-call.summary': { retryLimit: 3, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 120 },
  // Like summaries: provider outages retried twice (~30 s), then the results are stored `failed`.
  // A job is one ask (one schema: at most two LLM requests of 60 s): 150 s bounds it, and a job
  // of a crashed replica runs again inside the webhook's 4-minute hold (post-call-timing test).
  'analysis.extract': { retryLimit: 2, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 150 },
  // Like analysis: one ask per conversation, outages retried twice (~30 s), then the score is stored `failed`.
  'qa.score': { retryLimit: 2, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 150 },
  // The delivery schedule (30 s, 2 min, ...) is ours, not pg-boss's: each attempt is its own job,
  // and pg-boss retries only cover a crash or a database error around the attempt.
  'webhook.deliver': { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  'webhook.call-completed': { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  'webhook.call-failed': { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  // A dial slice lasts ~20 s; a crashed one expires and is retried elsewhere (the lease and the
  // stale-claim recovery make the re-run safe). Many retries: a campaign must not stall on a blip.
  // Expiry 40 s (two slices): with the 15 s supervisor a dead replica's campaign resumes elsewhere
  // within about a minute (its singleton job blocks the successor until then).
  'campaign.dial': { retryLimit: 100, retryDelaySeconds: 5, retryBackoff: false, expireInSeconds: 40 },
  // One update that re-reads the row: a retry or a duplicate is harmless.
  'campaign.media-check': { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  // Re-enqueued by every control plane's next heartbeat anyway: one quick retry, short expiry.
  'system-health.collect': { retryLimit: 1, retryDelaySeconds: 5, retryBackoff: false, expireInSeconds: 60 },
  // A tick that crashed is retried soon; its successor is already queued, so the chain never stops.
  // Short expiry: a tick killed mid-way holds the key (and its successor) until it expires, and a
  // tick stops taking rules after 20 s (alerts/evaluator.ts TICK_BUDGET_MS; the rule it started
  // and the live-node read before it get the rest).
  'alerts.evaluate': { retryLimit: 2, retryDelaySeconds: 5, retryBackoff: false, expireInSeconds: 45 },
  // Five attempts over ~5 min (10 s doubling, jittered), then the notification is `dead`.
  'alerts.notify': { retryLimit: 4, retryDelaySeconds: 10, retryBackoff: true, expireInSeconds: 60 },
  // Re-reads the current state each time, so a retry or a duplicate is harmless; a stale
  // registry refuses or admits calls wrongly, hence many quick retries.
  'billing.publish': { retryLimit: 20, retryDelaySeconds: 2, retryBackoff: true, expireInSeconds: 60 },
  // A run lasts as long as its cases; its job may expire while it still runs (harmless: a re-delivery
  // of a claimed run does nothing). Retries only cover a crash before the claim; a crash after it
  // is the watchdog's (the run ends `failed`, never re-run behind the caller's back).
  'simtests.run': { retryLimit: 2, retryDelaySeconds: 5, retryBackoff: false, expireInSeconds: 900 },
  // Re-reads the run each time; a crashed check is simply repeated.
  'simtests.watchdog': { retryLimit: 5, retryDelaySeconds: 5, retryBackoff: false, expireInSeconds: 60 },
  // Like alert ticks: the successor is queued first, so a crashed pass only delays the next one.
  'ops.node-sweep': { retryLimit: 1, retryDelaySeconds: 2, retryBackoff: false, expireInSeconds: 60 },
  // Like the node sweep: the successor is queued first; every pass re-reads the state.
  'portal.presence-sweep': { retryLimit: 1, retryDelaySeconds: 2, retryBackoff: false, expireInSeconds: 60 },
  // A caller is waiting on the line: quick retries, then the AI keeps the call.
  'portal.handoff': { retryLimit: 2, retryDelaySeconds: 1, retryBackoff: false, expireInSeconds: 30 },
  // A carrier recording is often not downloadable for a few seconds after the leg ends (404):
  // 4 retries over ~75 s (5 s doubling), inside the call.completed hold; then `failed`.
  'portal.transcribe': { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 600 },
  // A caller may be on a silent line: quick retries while the carrier is unreachable (~75 s).
  'telephony.step-deadline': { retryLimit: 4, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
  // A registry that does not answer: retried; the lazy sweep of reads covers what is left.
  'telephony.media-ended': { retryLimit: 3, retryDelaySeconds: 5, retryBackoff: true, expireInSeconds: 60 },
};

export interface EnqueueOptions {
  /**
   * Required: every queue uses pg-boss's `stately` policy, so the key deduplicates (at most one
   * queued, one waiting to retry and one running job per key and queue). Usually the row id the
   * job works on.
   */
  singletonKey: string;
  /** Not before this time (computed by the caller from its injected clock). */
  startAfter?: Date;
  /** Not before this many seconds from the database's now (a re-check, independent of clocks). Ignored with `startAfter`. */
  delaySeconds?: number;
  retryLimit?: number;
  /** Seconds before the first retry. */
  retryDelaySeconds?: number;
  retryBackoff?: boolean;
  /** Enqueue inside this transaction (the job exists iff the transaction commits). */
  tx?: SqlOrTx;
}

export interface JobContext<N extends JobName> {
  id: string;
  name: N;
  data: JobPayloads[N];
  /** 0 on the first attempt. */
  retryCount: number;
  retryLimit: number;
  /** No retry follows if this attempt throws: record the failure for good. */
  readonly isLastAttempt: boolean;
  /** Aborted when the queue closes. */
  signal: AbortSignal;
}

export type JobHandler<N extends JobName> = (job: JobContext<N>) => Promise<void>;

export interface WorkOptions {
  /** Jobs of this queue run at once in this process. Default 2. */
  concurrency?: number;
  /**
   * Idle polling period: how long a worker whose last fetch found nothing waits before it asks
   * again. A worker that just ran a job fetches again at once. Default `JobsOptions.pollingIntervalSeconds`.
   */
  pollingIntervalSeconds?: number;
}

export interface JobState {
  id: string;
  name: string;
  state: 'created' | 'retry' | 'active' | 'completed' | 'cancelled' | 'failed';
  retryCount: number;
  output: unknown;
}

export interface JobsOptions {
  sql: Sql;
  logger: Logger;
  /** pg-boss schema. Default: `<current schema>_boss` (`pgboss` when the current schema is `public`). */
  schema?: string;
  /** Idle polling period of every worker. Default 2 s (minimum 0.5). */
  pollingIntervalSeconds?: number;
  /** Supervisor period (expired jobs failed, archive). Default 15 s: a crashed replica's jobs come back within expiry + this. */
  maintenanceIntervalSeconds?: number;
  /** Overrides of `QUEUE_SETTINGS` (tests shorten expiry and retry delays). */
  queues?: Partial<Record<JobName, Partial<QueueSettings>>>;
}

export interface Jobs {
  readonly schema: string;
  /** The job id, or null when a job with the same `singletonKey` is already queued. */
  enqueue<N extends JobName>(name: N, data: JobPayloads[N], opts: EnqueueOptions): Promise<string | null>;
  work<N extends JobName>(name: N, handler: JobHandler<N>, opts?: WorkOptions): Promise<void>;
  state(name: JobName, id: string): Promise<JobState | null>;
  /**
   * Jobs per queue and state, counted in the database (every replica sees the same numbers).
   * `timeoutMs` bounds the statement: a scrape must not wait on a slow database.
   */
  counts(timeoutMs: number): Promise<Array<{ queue: string; state: string; count: number }>>;
  /** Attempts whose handler threw in this process, by queue (monotonic, for a failure rate). */
  readonly failedAttempts: ReadonlyMap<string, number>;
  /**
   * Keeps a recurring chain alive (a handler that queues its own successor first under one
   * `singletonKey`: the node sweep, the alert evaluation, the presence sweep). `kick` queues a
   * pass; it runs now and again every `everyMs` on this replica until `close()`. While the chain
   * is whole the key refuses the kick (one insert attempt); when both attempts of a pass failed
   * with the database away, no successor was queued, and the next kick restarts the chain.
   */
  keepChain(kick: () => Promise<unknown>, everyMs?: number): Promise<void>;
  /**
   * This process takes no new job (other replicas do); running handlers go on and `enqueue` still
   * works. Shutdown calls it first, so a domain that hands its work over as it closes (the dialer
   * queues its next slice) does not get that work back here. Idempotent.
   */
  stopFetching(): Promise<void>;
  /** Stops fetching, waits for running handlers (bounded), then aborts the rest. Idempotent. */
  close(): Promise<void>;
}

/** States worth a gauge: waiting, retrying, running, and given up (until pg-boss archives them). */
const COUNTED_STATES = ['created', 'retry', 'active', 'failed'] as const;

/** How long `close()` waits for running handlers before it aborts them. */
const STOP_TIMEOUT_MS = 10_000;

/** How long `close()` waits for handlers it aborted to return (they stop at their next await). */
const ABORTED_HANDLER_WAIT_MS = 3_000;

const noop = (): void => {};

/** Resolves when every promise of `set` has settled, or after `ms`. */
async function settledWithin(set: ReadonlySet<Promise<unknown>>, ms: number): Promise<void> {
  if (set.size === 0) return;
  let timer: NodeJS.Timeout | undefined;
  await Promise.race([Promise.allSettled([...set]), new Promise<void>((resolve) => (timer = setTimeout(resolve, ms)))]);
  clearTimeout(timer);
}

/**
 * How long a job's end that could not be written (the database restarting) is retried in the
 * background. Without it the job stays active until it expires (60 s and more), and a `stately`
 * singleton chain (the node sweep, the alert evaluation) waits that long for its next pass.
 */
const COMPLETION_RETRY_MS = 30_000;

/** System error codes (ENOTFOUND, ECONNRESET, EAI_AGAIN, ...) and undici's, not Node's ERR_ programming errors. */
const NETWORK_CODE = /^(E(?!RR_)[A-Z0-9_]+|UND_ERR_[A-Z_]+|CONNECT_TIMEOUT|CONNECTION_[A-Z]+)$/;

/**
 * What a failed job's log line carries. An expected failure (our own error, a network or database
 * error with a system code, a timeout) is retried and says what it was in one line: its message
 * and code. Anything else may be a bug: the error with its stack.
 */
export function jobFailureFields(err: unknown): Record<string, unknown> {
  if (err instanceof AppError && err.code !== 'INTERNAL') return { error: err.message, code: err.code };
  let cur: unknown = err;
  for (let depth = 0; depth < 5 && cur instanceof Error; depth++) {
    const code = (cur as { code?: unknown }).code;
    if (typeof code === 'string' && NETWORK_CODE.test(code)) return { error: (err as Error).message, code, ...(cur !== err ? { cause: cur.message } : {}) };
    if (cur.name === 'TimeoutError' || cur.name === 'AbortError') return { error: (err as Error).message, code: cur.name };
    cur = cur.cause;
  }
  return { err };
}

/** A listener count that never warns (0 would mean the same but breaks Node 20's getMaxListeners). */
const UNBOUNDED_LISTENERS = 1_000_000;

/** Jobs whose completion deadline is kept (oldest dropped first: no retry for those). */
const MAX_TRACKED_COMPLETIONS = 10_000;

/** A completion retry stops this long before the job's expiry (clock skew, fetch latency). */
const EXPIRY_MARGIN_MS = 5_000;

/** How often `keepChain` kicks: the longest a broken recurring chain stays broken. */
const CHAIN_KICK_MS = 15_000;

interface WorkerSlot {
  /** pg-boss's worker id ('' until `boss.work` returned). */
  id: string;
  busy: boolean;
}

/** Starts pg-boss (creating or migrating its schema) and every queue in `QUEUE_SETTINGS`. */
export async function startJobs(opts: JobsOptions): Promise<Jobs> {
  const { sql, logger } = opts;
  const schema = opts.schema ?? (await defaultSchema(sql));
  // Statements pg-boss sent and may not await: close() lets them finish before the pool ends.
  const inFlight = new Set<Promise<unknown>>();
  // Handlers running now. pg-boss's graceful stop waits only for workers still registered, and
  // stopFetching has already taken ours off: close() waits for these itself.
  const running = new Set<Promise<void>>();
  const closing = new AbortController();
  // Every job's signal and every completion retry listen on it. Not 0 ("unlimited"): Node 20's
  // getMaxListeners then throws for an AbortSignal, and undici's fetch calls it on the signal of
  // every request (a job's outbound fetch failed with ERR_INVALID_ARG_TYPE).
  setMaxListeners(UNBOUNDED_LISTENERS, closing.signal);
  // When each running job expires (its queue's expiry after it started, less a margin): a
  // completion retried later could complete the next attempt of the same job.
  const completionDeadlines = new Map<string, number>();
  const boss = new PgBoss({
    db: bossDb(sql, { logger, inFlight, completionRetry: { signal: closing.signal, deadlines: completionDeadlines } }),
    schema,
    supervise: true,
    migrate: true,
    // Cron schedules are not used: periodic work is driven by our injected clock.
    schedule: false,
    pollingIntervalSeconds: opts.pollingIntervalSeconds ?? 2,
    maintenanceIntervalSeconds: opts.maintenanceIntervalSeconds ?? 15,
  });
  // An EventEmitter 'error' without a listener would crash the process (e.g. a maintenance query
  // failing while the database restarts).
  boss.on('error', (err: Error) => logger.warn({ err }, 'job queue error'));
  await boss.start();
  for (const name of Object.keys(QUEUE_SETTINGS) as JobName[]) await ensureQueue(boss, name, { ...QUEUE_SETTINGS[name], ...opts.queues?.[name] });

  let closed = false;
  /**
   * New jobs are refused only once close() has let the running handlers finish: a handler still
   * running during the stop (a webhook attempt whose answer came in) queues its follow-up (the
   * retry) like any other; refusing it lost the attempt's outcome.
   */
  let sealed = false;
  const failedAttempts = new Map<string, number>();
  const chainKicks = new Set<NodeJS.Timeout>();
  // pg-boss 10 sleeps the polling interval after every fetch, also one that found a job, so one
  // worker ran at most one job per interval: a queue of concurrency 2 at 2 s did 1 job/s however
  // short its jobs (measured: 20 quick jobs took 20 s). A worker is told to fetch again right
  // after each job, so a backlog drains at handler speed, and a job enqueued here wakes one idle
  // worker of its queue instead of waiting for its next poll.
  const workers = new Map<JobName, WorkerSlot[]>();
  let fetching = true;
  const wakeOne = (name: JobName): void => {
    // A busy worker fetches again when its job ends anyway.
    const idle = fetching ? workers.get(name)?.find((w) => w.id && !w.busy) : undefined;
    if (idle) boss.notifyWorker(idle.id);
  };

  return {
    schema,
    async enqueue(name, data, o) {
      if (sealed) throw new Error('job queue closed');
      // pg-boss validates a key's presence, not its value: leave unset options out entirely.
      const send: PgBoss.SendOptions = { singletonKey: o.singletonKey };
      if (o.startAfter) send.startAfter = o.startAfter;
      else if (o.delaySeconds) send.startAfter = Math.max(1, Math.round(o.delaySeconds));
      if (o.retryLimit !== undefined) send.retryLimit = o.retryLimit;
      if (o.retryDelaySeconds !== undefined) send.retryDelay = o.retryDelaySeconds;
      if (o.retryBackoff !== undefined) send.retryBackoff = o.retryBackoff;
      if (o.tx) send.db = bossDb(o.tx);
      const id = await boss.send(name, data as object, send);
      // Not for a job inside a transaction (a worker woken now would not see it before the commit)
      // nor a delayed one: the workers' own polling finds those.
      if (id && !o.tx && !send.startAfter) wakeOne(name);
      return id;
    },
    async work(name, handler, o = {}) {
      const concurrency = o.concurrency ?? 2;
      // pg-boss 10 runs one fetch loop per `work()` call: N loops give N jobs at once.
      const expireMs = (opts.queues?.[name]?.expireInSeconds ?? QUEUE_SETTINGS[name].expireInSeconds) * 1000;
      for (let i = 0; i < concurrency; i++) {
        const slot: WorkerSlot = { id: '', busy: false };
        slot.id = await boss.work<JobPayloads[typeof name]>(
          name,
          { batchSize: 1, includeMetadata: true, pollingIntervalSeconds: o.pollingIntervalSeconds ?? opts.pollingIntervalSeconds ?? 2 },
          async ([job]) => {
            const ctx: JobContext<typeof name> = {
              id: job.id,
              name,
              data: job.data,
              retryCount: job.retryCount,
              retryLimit: job.retryLimit,
              isLastAttempt: job.retryCount >= job.retryLimit,
              signal: closing.signal,
            };
            slot.busy = true;
            completionDeadlines.set(job.id, Date.now() + expireMs - EXPIRY_MARGIN_MS);
            if (completionDeadlines.size > MAX_TRACKED_COMPLETIONS) completionDeadlines.delete(completionDeadlines.keys().next().value!);
            const done = Promise.resolve().then(() => handler(ctx));
            const tracked = done.then(noop, noop);
            running.add(tracked);
            void tracked.then(() => running.delete(tracked));
            try {
              await done;
            } catch (err) {
              logger.warn({ job: name, id: job.id, attempt: job.retryCount + 1, ...jobFailureFields(err) }, 'job failed');
              failedAttempts.set(name, (failedAttempts.get(name) ?? 0) + 1);
              throw err;
            } finally {
              slot.busy = false;
              // Fetch the next job at once (this loop's wait is skipped); an empty fetch then waits.
              if (slot.id && fetching) boss.notifyWorker(slot.id);
            }
          },
        );
        workers.set(name, [...(workers.get(name) ?? []), slot]);
      }
    },
    failedAttempts,
    async keepChain(kick, everyMs = CHAIN_KICK_MS) {
      await kick();
      const timer = setInterval(() => {
        if (!closed) kick().catch((err: Error) => logger.warn({ err: err.message }, 'recurring job not kicked (retried at the next kick)'));
      }, everyMs);
      timer.unref();
      chainKicks.add(timer);
    },
    async stopFetching() {
      if (!fetching) return;
      fetching = false;
      // A worker stops before its next fetch (a waiting one at once; a busy one after its job).
      for (const name of workers.keys()) await boss.offWork(name);
    },
    async counts(timeoutMs) {
      const rows = await sql.begin(async (tx) => {
        await tx.unsafe(`set local statement_timeout = ${Math.max(1, Math.floor(timeoutMs))}`);
        return tx.unsafe<{ queue: string; state: string; count: number }[]>(
          `select name as queue, state::text as state, count(*)::int as count from ${quoteIdent(schema)}.job where state::text = any($1) group by 1, 2`,
          [COUNTED_STATES as unknown as string[]],
        );
      });
      return rows.map((r) => ({ queue: r.queue, state: r.state, count: r.count }));
    },
    async state(name, id) {
      const job = await boss.getJobById(name, id, { includeArchive: true });
      if (!job) return null;
      return { id: job.id, name: job.name, state: job.state, retryCount: job.retryCount, output: job.output };
    },
    async close() {
      if (closed) return;
      closed = true;
      fetching = false;
      for (const t of chainKicks) clearInterval(t);
      const stopped = new Promise<void>((resolve) => boss.once('stopped', () => resolve()));
      await boss.stop({ graceful: true, wait: false, timeout: STOP_TIMEOUT_MS, close: false });
      // Running handlers get STOP_TIMEOUT_MS to finish; the rest are told to give up (their jobs
      // expire and retry elsewhere) and get a moment to write that (a test run marked failed).
      const t = setTimeout(() => closing.abort(new Error('job queue closed')), STOP_TIMEOUT_MS);
      // pg-boss's 'stopped' waits on its own statements: bounded too (a connection left hanging by
      // a database that stopped answering kept a control plane from ever exiting).
      await Promise.all([settledWithin(new Set([stopped]), STOP_TIMEOUT_MS + ABORTED_HANDLER_WAIT_MS), settledWithin(running, STOP_TIMEOUT_MS)]);
      clearTimeout(t);
      closing.abort(new Error('job queue closed'));
      await settledWithin(running, ABORTED_HANDLER_WAIT_MS);
      // The last handlers' completions (sent after 'stopped') reach the database before the pool
      // closes, within a bound: a statement on a hanging connection is given up (the job expires
      // and runs again; handlers are idempotent).
      await settledWithin(inFlight, ABORTED_HANDLER_WAIT_MS);
      sealed = true;
    },
  };
}

/** pg-boss's statements that mark a job completed or failed by id (plans.js `completeJobs`, `failJobsById`). */
const UNAWAITED_COMPLETION = /SET completed_on = now\(\),\s*state = 'completed'|WITH deleted_jobs AS \(\s*DELETE FROM \S+\.job\s+WHERE name = \$1 AND id IN/;
const COMPLETE_STATEMENT = /SET completed_on = now\(\),\s*state = 'completed'/;

/**
 * pg-boss's database adapter over postgres.js: `$n` parameters and `{rows}` results like `pg`.
 * Statements without parameters go over the simple protocol (pg-boss sends multi-statement
 * scripts, e.g. its migrations, as one text). Objects need no conversion: postgres.js learns each
 * parameter's type from the server (`$3::jsonb`) and serialises them as JSON itself.
 */
export interface BossDbOptions {
  logger?: Logger;
  /** Statements in flight, for `close()` to wait on. */
  inFlight?: Set<Promise<unknown>>;
  /**
   * A job's completion that could not be written is retried in the background, until `signal`
   * aborts, `COMPLETION_RETRY_MS` passes or the job's deadline (by id) comes.
   */
  completionRetry?: { signal: AbortSignal; deadlines: Map<string, number> };
}

export function bossDb(sql: SqlOrTx, o: BossDbOptions = {}): PgBoss.Db {
  const track = <T>(p: Promise<T>): Promise<T> => {
    if (o.inFlight) {
      o.inFlight.add(p);
      void p.then(
        () => o.inFlight?.delete(p),
        () => o.inFlight?.delete(p),
      );
    }
    return p;
  };
  return {
    executeSql(text: string, values: unknown[] = []) {
      const result = track(run(text, values));
      if (!UNAWAITED_COMPLETION.test(text)) return result;
      const completes = COMPLETE_STATEMENT.test(text);
      const ids = Array.isArray(values[1]) ? (values[1] as string[]) : [];
      // pg-boss's worker records a job's end without awaiting it (manager.js `onFetch` calls the
      // async `complete`/`fail` and drops the promise): a failed write (pool closing, database
      // restarting) would reject pg-boss's own wrapper promise, an unhandled rejection that kills
      // the process under Node's default policy. So these statements never reject; a completion is
      // retried in the background until the job's expiry nears, else (and for a failure) the job
      // stays active until it expires and is then retried (handlers are idempotent).
      const forget = (): void => ids.forEach((id) => o.completionRetry?.deadlines.delete(id));
      return result.then(
        (r) => (forget(), r),
        (err: Error) => {
          const retry = o.completionRetry;
          const deadline = Math.min(Date.now() + COMPLETION_RETRY_MS, ...ids.map((id) => retry?.deadlines.get(id) ?? 0));
          if (retry && completes && ids.length && !retry.signal.aborted) void track(retryCompletion(text, values, err, retry.signal, deadline).finally(forget));
          else {
            forget();
            o.logger?.warn({ err: err.message }, 'job completion not recorded; the job is retried after it expires');
          }
          return { rows: [{ count: '0' }] };
        },
      );
    },
  };

  /**
   * Only completions are retried, and only until the job would expire: completing is idempotent
   * for one attempt (`state = 'active'`), and before the expiry no other attempt can be active.
   * A failure is not retried: a first write that committed unseen would let a retry fail the
   * next attempt. Such a job expires and runs again, as when its process dies.
   */
  async function retryCompletion(text: string, values: unknown[], first: Error, signal: AbortSignal, deadline: number): Promise<void> {
    o.logger?.debug({ err: first.message }, 'job completion not written yet; retrying');
    let last = first;
    for (let delay = 250; !signal.aborted && Date.now() + delay <= deadline; delay = Math.min(delay * 2, 4000)) {
      // Aborted (the queue closing): give up, the job expires as before.
      if (!(await sleepOn(realClock, delay, signal, () => new Error('job queue closed')).then(() => true, () => false))) break;
      try {
        await run(text, values);
        o.logger?.info({ firstError: first.message }, 'job completion recorded after a retry');
        return;
      } catch (err) {
        last = err as Error;
      }
    }
    o.logger?.warn({ err: last.message }, 'job completion not recorded; the job is retried after it expires');
  }

  async function run(text: string, values: unknown[]): Promise<{ rows: unknown[] }> {
    // `pg` sends undefined as NULL; postgres.js refuses it.
    const params = values.map((v) => (v === undefined ? null : v));
    // pg-boss runs its locked scripts as one `BEGIN; ...; COMMIT;` text: postgres.js allows an
    // explicit BEGIN only on a reserved connection (a pooled one could interleave other queries).
    if (/^\s*BEGIN\b/i.test(text) && 'reserve' in sql) {
      const conn = await sql.reserve();
      try {
        return { rows: [...(await conn.unsafe(text, params as never[]))] };
      } catch (err) {
        // A failed statement skips the rest of the script, COMMIT included: the connection would
        // go back to the pool inside an aborted transaction and fail every later query on it.
        await conn.unsafe('ROLLBACK').catch(() => {});
        throw err;
      } finally {
        conn.release();
      }
    }
    return { rows: [...(await sql.unsafe(text, params as never[]))] };
  }
}

async function defaultSchema(sql: Sql): Promise<string> {
  const [row] = await sql<{ s: string }[]>`select current_schema() as s`;
  return !row?.s || row.s === 'public' ? 'pgboss' : `${row.s}_boss`;
}

async function ensureQueue(boss: PgBoss, name: JobName, s: QueueSettings): Promise<void> {
  const options = { name, policy: 'stately' as const, retryLimit: s.retryLimit, retryDelay: s.retryDelaySeconds, retryBackoff: s.retryBackoff, expireInSeconds: s.expireInSeconds };
  if (!(await boss.getQueue(name))) {
    try {
      await boss.createQueue(name, options);
      return;
    } catch (err) {
      // Another replica created it between our read and our insert: fall through to update.
      if ((err as { code?: string }).code !== '23505') throw err;
    }
  }
  await boss.updateQueue(name, options);
}

function quoteIdent(name: string): string {
  return `"${name.replace(/"/g, '""')}"`;
}
