/**
 * The post-call QA job `qa.score` (issue 16): every completed conversation of an agent with an
 * active rubric is scored by the agent's PUBLISHED LLM (built like summaries and analysis).
 *
 * - Queued by the post-call relay inside its transaction, together with the conversation's
 *   `pending` score row (the webhook's hold waits on that row), only when the conversation
 *   completed with an agent that has an active rubric at that moment.
 * - One forced tool call per conversation scores every criterion (0-100, a justification and the
 *   verbatim transcript turn it rests on); ajv checks the JSON Schema, criteria.ts the rest (every
 *   criterion once, quotes found in the transcript); one corrective retry (analysis/ask.ts).
 * - Idempotent: the outcome is an upsert on the unique conversation that only moves a `pending`
 *   row, and the job returns at once when the row is decided, so a retried job never scores twice.
 * - Provider failures throw and pg-boss retries (QUEUE_SETTINGS); the last attempt stores
 *   `failed` with the error. Still-invalid answers, an unpublished agent, a refused provider config
 *   or an empty transcript store `failed` at once: retrying changes nothing.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import type { Tx } from '../post-call/relay.js';
import type { LiveConfigFn, LlmFactory } from '../conversations/summary.js';
import { CannotAsk, prepareAsk } from '../analysis/prepare.js';
import { ASK_REQUEST_TIMEOUT_MS, askForObject } from '../analysis/ask.js';
import { QA_TOOL, answerProblems, isFlagged, overallScore, scoresOf, scoringSchema, type QaCriterion, type ScoringAnswer } from './criteria.js';
import * as store from './store.js';

const MAX_ERROR_CHARS = 500;

export const QA_PROMPT =
  'You are a quality reviewer of phone calls between a caller and an AI agent. ' +
  `Call ${QA_TOOL} exactly once. For every criterion of the rubric give a score from 0 (not met) to 100 (fully met), ` +
  'a one-sentence justification, and the one transcript turn the score is based on, copied verbatim (for example "Agent: ..."). ' +
  'Set compliance_issue to true only when the agent said something non-compliant, and explain it in compliance_note.';

export interface ScorerOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  jobs: Jobs;
  liveConfig?: LiveConfigFn;
  llmFor: LlmFactory;
  /** Scorings at once in this process. Default 2. */
  concurrency?: number;
  /** Per LLM request. Default 60 s. */
  timeoutMs?: number;
}

export interface Scorer {
  /** The post-call handler: the pending row and the job (with the relay's transaction) when there is a rubric. */
  onConversationEnded(ev: { conversation_id: string; status: string }, tx: Tx): Promise<void>;
}

/** Ends the conversation's scoring with `failed` (nothing to retry). */

/** The rubric text the model sees with the transcript (the tool schema fixes names, this gives meaning and weight). */
export function rubricText(name: string, criteria: QaCriterion[]): string {
  return [`Rubric "${name}":`, ...criteria.map((c) => `- ${c.name} (weight ${c.weight})${c.description ? `: ${c.description}` : ''}`)].join('\n');
}

export async function createScorer(opts: ScorerOptions): Promise<Scorer> {
  const { sql, logger, clock, jobs } = opts;
  const timeoutMs = opts.timeoutMs ?? ASK_REQUEST_TIMEOUT_MS;

  async function run(job: JobContext<'qa.score'>): Promise<void> {
    const conversationId = job.data.conversation_id;
    const row = await store.scoreOfConversation(sql, conversationId);
    // Decided already (a retried or duplicated job), or never asked for.
    if (!row || row.status !== 'pending') return;
    const ids = { id: row.id, conversation_id: conversationId, workspace_id: row.workspace_id, agent_id: row.agent_id };
    const rubric = await store.activeRubric(sql, row.agent_id);
    const now = () => new Date(clock.now());
    const failed = (error: string, extra: Partial<store.Outcome> = {}) =>
      store.saveOutcome(sql, ids, {
        rubric_id: rubric?.id ?? row.rubric_id,
        rubric_name: rubric?.name ?? row.rubric_name,
        pass_threshold: rubric?.pass_threshold ?? row.pass_threshold,
        criteria: [],
        overall_score: null,
        flagged: false,
        compliance_issue: false,
        compliance_note: null,
        model: '',
        latency_ms: 0,
        attempts: 0,
        ...extra,
        status: 'failed',
        error: error.slice(0, MAX_ERROR_CHARS),
      }, now());
    // Unbound since the call ended: the rubric it was queued for is no longer wanted.
    if (!rubric) {
      await failed('the agent no longer has an active QA rubric');
      return;
    }
    let ready: Awaited<ReturnType<typeof prepareAsk>>;
    try {
      ready = await prepareAsk({ sql, liveConfig: opts.liveConfig, llmFor: opts.llmFor }, row.agent_id, conversationId);
    } catch (err) {
      if (!(err instanceof CannotAsk)) throw err;
      await failed(err.message);
      logger.debug({ conversationId, reason: err.message }, 'QA scoring not possible');
      return;
    }
    const { llm, settings, transcript } = ready;
    const model = `${settings.provider_name}/${settings.model_name || llm.model}`;
    const started = clock.now();
    let out: Awaited<ReturnType<typeof askForObject>>;
    try {
      out = await askForObject({
        llm,
        schema: scoringSchema(rubric.criteria),
        description: `Record the QA scores of this call. ${rubricText(rubric.name, rubric.criteria)}`,
        transcript,
        model: settings.model_name || undefined,
        clock,
        timeoutMs,
        signal: job.signal,
        tool: QA_TOOL,
        prompt: `${QA_PROMPT}\n\n${rubricText(rubric.name, rubric.criteria)}`,
        check: (v) => answerProblems(v as unknown as ScoringAnswer, rubric.criteria, transcript),
      });
    } catch (err) {
      if (!job.isLastAttempt) throw err;
      await failed((err as Error)?.message ?? String(err), { model, latency_ms: Math.round(clock.now() - started), attempts: 1 });
      return;
    }
    const latency_ms = Math.round(clock.now() - started);
    if (!out.ok) {
      await failed(out.error, { model, latency_ms, attempts: out.requests });
      return;
    }
    const answer = out.values as unknown as ScoringAnswer;
    const criteria = scoresOf(answer, rubric.criteria);
    const overall = overallScore(criteria);
    const note = answer.compliance_note?.trim() || null;
    await store.saveOutcome(sql, ids, {
      rubric_id: rubric.id,
      rubric_name: rubric.name,
      pass_threshold: rubric.pass_threshold,
      criteria,
      overall_score: overall,
      flagged: isFlagged(overall, rubric.pass_threshold, answer.compliance_issue),
      compliance_issue: answer.compliance_issue,
      compliance_note: note,
      model,
      latency_ms,
      attempts: out.requests,
      error: null,
      status: 'scored',
    }, now());
  }

  await jobs.work('qa.score', run, { concurrency: opts.concurrency ?? 2 });

  return {
    async onConversationEnded(ev, tx) {
      if (ev.status !== 'completed') return;
      if (!(await store.insertPending(tx, newId(), ev.conversation_id, new Date(clock.now())))) return;
      await jobs.enqueue('qa.score', { conversation_id: ev.conversation_id }, { singletonKey: ev.conversation_id, tx });
    },
  };
}
