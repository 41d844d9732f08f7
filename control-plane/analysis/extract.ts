/**
 * The post-call analysis job `analysis.extract` (issue 16): every completed call of an agent with
 * active schemas gets one result per schema, from the agent's PUBLISHED LLM (the same provider a
 * call runs, built by the shared provider registry through the outbound client, as summaries are).
 *
 * - Queued by the post-call relay inside its transaction, one job per schema active at that
 *   moment (none for agents without one). A job is one ask (at most two LLM requests), so its
 *   expiry, which bounds how late a crashed replica's job is picked up again, stays well inside
 *   the `call.completed` hold whatever the number of schemas.
 * - Idempotent (at least once): schemas that already have a result are skipped, and the insert is
 *   `on conflict (conversation_id, schema_id) do nothing`, so a retried or duplicated job never
 *   adds a second result.
 * - Provider failures (network, 5xx, timeout) throw and pg-boss retries (QUEUE_SETTINGS); on the
 *   last attempt the schema's result is stored `failed` with the error. Answers that do not match
 *   the schema after one corrective retry (ask.ts), and agents that cannot be asked (never
 *   published, no LLM, empty transcript), are stored `failed` at once: retrying changes nothing.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import type { Tx } from '../post-call/relay.js';
import type { LiveConfigFn, LlmFactory } from '../conversations/summary.js';
import { CannotAsk, prepareAsk } from './prepare.js';
import { ASK_REQUEST_TIMEOUT_MS, askForObject } from './ask.js';
import { jsonSchemaOf } from './fields.js';
import * as store from './store.js';

const MAX_ERROR_CHARS = 500;

export interface AnalyzerOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  jobs: Jobs;
  liveConfig?: LiveConfigFn;
  llmFor: LlmFactory;
  /** Extractions at once in this process. Default 2. */
  concurrency?: number;
  /** Per LLM request. Default 60 s. */
  timeoutMs?: number;
}

export interface Analyzer {
  /** The post-call handler: queues the job (with the relay's transaction) when there is something to extract. */
  onConversationEnded(ev: { conversation_id: string; status: string }, tx: Tx): Promise<void>;
}

/** Ends the whole conversation's analysis with `failed` results (nothing to retry). */

export async function createAnalyzer(opts: AnalyzerOptions): Promise<Analyzer> {
  const { sql, logger, clock, jobs } = opts;
  const timeoutMs = opts.timeoutMs ?? ASK_REQUEST_TIMEOUT_MS;

  async function run(job: JobContext<'analysis.extract'>): Promise<void> {
    const conversationId = job.data.conversation_id;
    const [conv] = await sql<{ agent_id: string; workspace_id: string; status: string }[]>`
      select agent_id, workspace_id, status from conversations where id = ${conversationId}`;
    if (!conv || conv.status !== 'completed') return;
    const done = await store.doneSchemaIds(sql, conversationId);
    const wanted = job.data.schema_id;
    const todo = (await store.listSchemas(sql, conv.agent_id, { activeOnly: true })).filter((s) => !done.has(s.id) && (wanted === undefined || s.id === wanted));
    if (todo.length === 0) return;
    const base = { conversation_id: conversationId, agent_id: conv.agent_id, workspace_id: conv.workspace_id };
    const save = (r: Omit<store.NewResult, 'id' | keyof typeof base>) => store.insertResult(sql, { id: newId(), ...base, ...r }, new Date(clock.now()));

    let ready: Awaited<ReturnType<typeof prepareAsk>>;
    try {
      ready = await prepareAsk({ sql, liveConfig: opts.liveConfig, llmFor: opts.llmFor }, conv.agent_id, conversationId);
    } catch (err) {
      if (!(err instanceof CannotAsk)) throw err;
      for (const s of todo) await save({ schema_id: s.id, status: 'failed', values: {}, model: '', latency_ms: 0, attempts: 0, error: err.message });
      logger.debug({ conversationId, reason: err.message }, 'analysis not possible');
      return;
    }
    const { llm, settings, transcript } = ready;
    const model = `${settings.provider_name}/${settings.model_name || llm.model}`;
    for (const s of todo) {
      const started = clock.now();
      try {
        const out = await askForObject({
          llm,
          schema: jsonSchemaOf(s.fields),
          description: [s.name, s.description].filter(Boolean).join(': '),
          transcript,
          model: settings.model_name || undefined,
          clock,
          timeoutMs,
          signal: job.signal,
        });
        const latency_ms = Math.round(clock.now() - started);
        if (out.ok) await save({ schema_id: s.id, status: 'complete', values: out.values, model, latency_ms, attempts: out.requests, error: null });
        else await save({ schema_id: s.id, status: 'failed', values: {}, model, latency_ms, attempts: out.requests, error: out.error.slice(0, MAX_ERROR_CHARS) });
      } catch (err) {
        // Schemas stored before this one stay; the retry does the rest.
        if (!job.isLastAttempt) throw err;
        const error = ((err as Error)?.message ?? String(err)).slice(0, MAX_ERROR_CHARS);
        await save({ schema_id: s.id, status: 'failed', values: {}, model, latency_ms: Math.round(clock.now() - started), attempts: 1, error });
      }
    }
  }

  await jobs.work('analysis.extract', run, { concurrency: opts.concurrency ?? 2 });

  return {
    async onConversationEnded(ev, tx) {
      if (ev.status !== 'completed') return;
      for (const schemaId of await store.activeSchemaIds(tx, ev.conversation_id)) {
        await jobs.enqueue('analysis.extract', { conversation_id: ev.conversation_id, schema_id: schemaId }, { singletonKey: `${ev.conversation_id}:${schemaId}`, tx });
      }
    },
  };
}
