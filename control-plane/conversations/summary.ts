/**
 * Post-call summaries (spec doc 2: `generate_call_summary`, "filled asynchronously"; issue 14:
 * every completed call). Runs as the durable job `post-call.summary` (control-plane/jobs), never on
 * the call's path:
 *
 * - Asked for when the agent's published version has `telephony.generate_call_summary`, or
 *   explicitly (`PUT /conversations/{id}` with `agent_id`, spec: "triggers summary generation"),
 *   which marks the row `summary_status = 'pending'` before the job runs.
 * - Written by the agent's published LLM (`sim` is the offline scripted model; every provider is
 *   built by the engine's provider registry, as a call would build it).
 * - A provider failure throws: pg-boss retries with backoff (QUEUE_SETTINGS); the last attempt
 *   records `summary_status = 'failed'` with `summary_error`. The conversation row is otherwise
 *   never touched by a failure.
 * - Idempotent (at least once): a completed summary is never regenerated; the final update is
 *   guarded by `summary_status is distinct from 'completed'`.
 * - A skip or a failure is written only if no explicit request came in since the job read the row
 *   (`summary_requests`): such a request queued a job of its own (pg-boss `stately`: one queued
 *   behind the running one), which must find the row `pending`.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { AppError } from '../../shared/errors.js';
import type { ProviderSettings } from '../../shared/voice/session-config.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import { createLlmProvider } from '../../shared/providers/registry.js';
import { createOutboundClient, type OutboundClient } from '../../shared/outbound/index.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { listMessages } from './store.js';

/** What the summary needs of the agents domain's `liveConfig(agentId)` (the published snapshot). */
export type LiveConfigFn = (agentId: string) => Promise<
  { providers?: { llm?: ProviderSettings | null }; telephony?: { generate_call_summary?: boolean } | null } | null | undefined
>;
export type LlmFactory = (settings: ProviderSettings) => LlmProvider | Promise<LlmProvider>;

export const SUMMARY_PROMPT =
  'You write the post-call summary of a phone conversation between a caller and an AI agent. ' +
  'In at most three sentences say why the caller called, what the agent did, and how the call ended. ' +
  'Plain text, no lists.';
/** Longest transcript sent to the model (the end of the call is kept). */
const MAX_TRANSCRIPT_CHARS = 20_000;
const MAX_SUMMARY_CHARS = 4000;
const MAX_ERROR_CHARS = 500;
/** Outcomes remembered for `waitFor` (tests, diagnostics); oldest forgotten first. */
const MAX_REMEMBERED = 1000;
/** Outcomes kept per conversation (the newest). */
const MAX_OUTCOMES_PER_CONVERSATION = 16;

export type SummaryStatus = 'completed' | 'failed' | 'skipped';
export interface SummaryOutcome {
  conversationId: string;
  status: SummaryStatus | 'retrying';
  reason?: string;
}

export interface SummarizerOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  jobs: Jobs;
  liveConfig?: LiveConfigFn;
  llmFor?: LlmFactory;
  /** Tenant provider `base_url`s go through it (shared/outbound). Default: a client allowing no internal address, closed with the summarizer. */
  outbound?: OutboundClient;
  /** Summaries generated at once by this process. Default 2. */
  concurrency?: number;
  /** Per attempt. Default 60 s. */
  timeoutMs?: number;
}

export interface Summarizer {
  /** Explicit request (PUT with agent_id, which already marked the row `pending`): makes sure a job is queued. */
  request(conversationId: string): Promise<void>;
  /** Queues the job for a conversation that just ended (the post-call relay, inside its transaction). */
  enqueue(conversationId: string, tx: Parameters<Jobs['enqueue']>[2]['tx']): Promise<void>;
  /** Resolves with the first outcome in this process (remembered or future) matching `match`. */
  waitFor(conversationId: string, match?: (o: SummaryOutcome) => boolean): Promise<SummaryOutcome>;
  close(): Promise<void>;
}

/** The engine's provider registry (`sim` is the offline scripted model, a provider like any other). */
export function defaultLlmFactory(clock: Clock, outbound: OutboundClient): LlmFactory {
  return (settings) => createLlmProvider(settings, { clock, outbound });
}

/**
 * The call as `Caller: ...` / `Agent: ...` lines, the end kept when it is longer than
 * MAX_TRANSCRIPT_CHARS; '' when nothing was said. Also what the post-call analysis reads.
 */
export async function transcriptOf(sql: Sql, conversationId: string): Promise<string> {
  const messages = await listMessages(sql, conversationId);
  if (!messages.some((m) => m.content.trim())) return '';
  const transcript = messages.map((m) => `${m.role === 'user' ? 'Caller' : 'Agent'}: ${m.content}`).join('\n');
  return transcript.length > MAX_TRANSCRIPT_CHARS ? transcript.slice(-MAX_TRANSCRIPT_CHARS) : transcript;
}

/** A decision that ends the job without a summary and without a retry. */
class Skip extends Error {}

export async function createSummarizer(opts: SummarizerOptions): Promise<Summarizer> {
  const { sql, logger, clock, jobs } = opts;
  const timeoutMs = opts.timeoutMs ?? 60_000;
  // Never without the address policy: unwired, a strict client of our own (no exceptions).
  const ownOutbound = opts.outbound || opts.llmFor ? undefined : createOutboundClient({ clock });
  const llmFor = opts.llmFor ?? defaultLlmFactory(clock, (opts.outbound ?? ownOutbound)!);
  const outcomes = new Map<string, SummaryOutcome[]>();
  let waiters: Array<{ conversationId: string; match: (o: SummaryOutcome) => boolean; resolve: (o: SummaryOutcome) => void }> = [];

  function settle(o: SummaryOutcome): void {
    const list = outcomes.get(o.conversationId) ?? [];
    list.push(o);
    // Each summary run of a conversation adds one: only the latest few are read.
    if (list.length > MAX_OUTCOMES_PER_CONVERSATION) list.shift();
    outcomes.delete(o.conversationId);
    outcomes.set(o.conversationId, list);
    if (outcomes.size > MAX_REMEMBERED) outcomes.delete(outcomes.keys().next().value as string);
    waiters = waiters.filter((w) => (w.conversationId === o.conversationId && w.match(o) ? (w.resolve(o), false) : true));
  }

  async function run(job: JobContext<'post-call.summary'>): Promise<void> {
    const id = job.data.conversation_id;
    // The explicit requests this attempt has seen (read with the row, below; -1: the read failed).
    // A skip or a failure is written only while it is unchanged: a request made meanwhile (PUT
    // with agent_id) marked the row pending and queued a job of its own, which must find it so.
    const seen = { requests: -1 };
    try {
      const summary = await generate(id, job.signal, seen);
      await sql`
        update conversations set summary = ${summary}, summary_status = 'completed', summary_error = null, updated_at = now()
        where id = ${id} and summary_status is distinct from 'completed'`;
      settle({ conversationId: id, status: 'completed' });
    } catch (err) {
      if (err instanceof Skip) {
        const marked = await sql`
          update conversations set summary_status = 'skipped', updated_at = now()
          where id = ${id} and (${seen.requests}::int < 0 or summary_requests = ${seen.requests}) and summary_status is distinct from 'completed'`;
        const reason = marked.count > 0 ? err.message : `${err.message}; superseded by a newer request`;
        logger.debug({ conversationId: id, reason }, 'summary skipped');
        settle({ conversationId: id, status: 'skipped', reason });
        return;
      }
      const message = ((err as Error)?.message ?? String(err)).slice(0, MAX_ERROR_CHARS);
      // Visible while retrying; final on the last attempt. Never touches anything else on the row.
      const status = job.isLastAttempt ? 'failed' : 'pending';
      await sql`
        update conversations set summary_status = ${status}, summary_error = ${message}, updated_at = now()
        where id = ${id} and (${seen.requests}::int < 0 or summary_requests = ${seen.requests}) and summary_status is distinct from 'completed'`.catch(() => {});
      settle({ conversationId: id, status: job.isLastAttempt ? 'failed' : 'retrying', reason: message });
      throw err;
    }
  }

  async function generate(conversationId: string, signal: AbortSignal, seen: { requests: number }): Promise<string> {
    const [conv] = await sql<{ agent_id: string; summary_status: string | null; summary_requests: number }[]>`
      select agent_id, summary_status, summary_requests from conversations where id = ${conversationId}`;
    if (!conv) throw new Skip('conversation not found');
    seen.requests = conv.summary_requests;
    if (conv.summary_status === 'completed') throw new Skip('already summarised');
    if (!opts.liveConfig) throw new Skip('no agent config resolver (liveConfig) wired');
    let live: Awaited<ReturnType<LiveConfigFn>>;
    try {
      live = await opts.liveConfig(conv.agent_id);
    } catch (err) {
      // Unknown or never-published agent: nothing to retry. Anything else (database) is retried.
      if (err instanceof AppError && err.status < 500) throw new Skip(err.message);
      throw err;
    }
    const asked = conv.summary_status === 'pending' || live?.telephony?.generate_call_summary === true;
    if (!asked) throw new Skip('not asked for (generate_call_summary is off)');
    const settings = live?.providers?.llm;
    if (!settings?.provider_name) throw new Skip('the agent has no published LLM');
    const transcript = await transcriptOf(sql, conversationId);
    if (!transcript) throw new Skip('empty transcript');
    const llm = await llmFor(settings);
    const abort = new AbortController();
    const timer = clock.setTimeout(() => abort.abort(new Error(`summary timed out after ${timeoutMs} ms`)), timeoutMs);
    const onAbort = () => abort.abort(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    let text = '';
    try {
      for await (const ev of llm.stream({
        messages: [
          { role: 'system', content: SUMMARY_PROMPT },
          { role: 'user', content: transcript },
        ],
        tools: [],
        model: settings.model_name,
        signal: abort.signal,
      })) {
        if (ev.type === 'text') text += ev.delta;
        if (text.length > MAX_SUMMARY_CHARS) break;
      }
    } finally {
      clock.clearTimeout(timer);
      signal.removeEventListener('abort', onAbort);
    }
    if (abort.signal.aborted) throw abort.signal.reason as Error;
    const summary = text.trim().slice(0, MAX_SUMMARY_CHARS);
    if (!summary) throw new Error('summary LLM returned no text');
    return summary;
  }

  await jobs.work('post-call.summary', run, { concurrency: opts.concurrency ?? 2 });

  return {
    async request(conversationId) {
      await jobs.enqueue('post-call.summary', { conversation_id: conversationId }, { singletonKey: conversationId });
    },
    async enqueue(conversationId, tx) {
      await jobs.enqueue('post-call.summary', { conversation_id: conversationId }, { singletonKey: conversationId, tx });
    },
    waitFor(conversationId, match = () => true) {
      const hit = outcomes.get(conversationId)?.find(match);
      if (hit) return Promise.resolve(hit);
      return new Promise((resolve) => waiters.push({ conversationId, match, resolve }));
    },
    async close() {
      waiters = [];
      await ownOutbound?.close();
    },
  };
}
