/**
 * What a call's `call.completed` event says about its post-call analysis (spec doc 3:
 * `qa_score`, `analysis_status`; issue 16), and whether the event should keep holding for it.
 *
 * Three pieces can be produced for a stint, each only when configured for it:
 * - summary: `conversations.summary_status` (NULL/pending: running; `skipped`: not wanted);
 * - QA: the stint's `qa_scores` row (inserted `pending` by the post-call relay when its agent has
 *   an active rubric; none: no rubric);
 * - analysis: the active schemas of its agent last changed before the stint ended (so a schema
 *   created or re-activated later is not waited for: its job may never have been queued), against
 *   their `analysis_results` (completed stints only, as the extraction job).
 *
 * Per piece over the stints: `none` (configured nowhere), `pending` (one still running), `done`
 * (every configured stint succeeded) or `failed`. The event holds while a piece is pending (or a
 * stint is active) until the 4-minute hold ends; then, as the spec defines it:
 * - `skipped`: an abandoned call (failed calls have their own event, always `skipped`);
 * - `complete`: the summary and the QA score are both present;
 * - `partial`: one of them is (an agent without a rubric is `partial` at best: no score comes);
 * - `timeout`: neither is. The spec keeps `skipped` for failed and abandoned calls, so a call
 *   with nothing configured is `timeout` too.
 */
import type { Sql } from '../../shared/db/client.js';

export type PieceState = 'none' | 'pending' | 'done' | 'failed';
export type AnalysisStatus = 'complete' | 'partial' | 'timeout' | 'skipped';

export interface Pieces {
  summary: PieceState;
  qa: PieceState;
  analysis: PieceState;
}

export interface QaScoreBody {
  overall_score: number;
  flagged: boolean;
  status: string;
}

export interface CallAnalysis {
  pieces: Pieces;
  /** The first stint's decided score (scored or reviewed), else null. */
  qaScore: QaScoreBody | null;
}

interface StintState {
  id: string;
  status: string;
  summary_status: string | null;
}

/** Reads the three pieces of the call's stints (ordered as the event lists them). */
export async function loadCallAnalysis(sql: Sql, stints: StintState[]): Promise<CallAnalysis> {
  const ids = stints.map((s) => s.id);
  const qa = await sql<{ conversation_id: string; status: string; overall_score: number | null; flagged: boolean }[]>`
    select conversation_id, status, overall_score, flagged from qa_scores where conversation_id = any(${ids}::uuid[])`;
  const analysis = await sql<{ id: string; expected: number; complete: number; failed: number }[]>`
    select c.id, count(s.id)::int as expected,
           count(r.id) filter (where r.status = 'complete')::int as complete,
           count(r.id) filter (where r.status = 'failed')::int as failed
    from conversations c
    join analysis_schemas s on s.agent_id = c.agent_id and s.is_active and s.updated_at <= coalesce(c.ended_at, now())
    left join analysis_results r on r.conversation_id = c.id and r.schema_id = s.id
    where c.id = any(${ids}::uuid[]) and c.status = 'completed'
    group by c.id`;
  const qaBy = new Map(qa.map((q) => [q.conversation_id, q]));
  const anBy = new Map(analysis.map((a) => [a.id, a]));
  const pieces: Pieces = {
    summary: merge(stints.map((s) => summaryState(s.summary_status))),
    qa: merge(stints.map((s) => qaState(qaBy.get(s.id)?.status))),
    analysis: merge(stints.map((s) => analysisState(anBy.get(s.id)))),
  };
  const scored = stints.map((s) => qaBy.get(s.id)).find((q) => q && (q.status === 'scored' || q.status === 'reviewed') && q.overall_score !== null);
  return { pieces, qaScore: scored ? { overall_score: scored.overall_score!, flagged: scored.flagged, status: scored.status } : null };
}

export function summaryState(s: string | null): PieceState {
  if (s === null || s === 'pending') return 'pending';
  if (s === 'completed') return 'done';
  if (s === 'failed') return 'failed';
  return 'none'; // skipped: not wanted for this stint
}

export function qaState(s: string | undefined): PieceState {
  if (s === undefined) return 'none';
  if (s === 'pending') return 'pending';
  return s === 'failed' ? 'failed' : 'done';
}

export function analysisState(a: { expected: number; complete: number; failed: number } | undefined): PieceState {
  if (!a || a.expected === 0) return 'none';
  if (a.complete + a.failed < a.expected) return 'pending';
  return a.failed === 0 ? 'done' : 'failed';
}

/** One piece over every stint. */
export function merge(states: PieceState[]): PieceState {
  const configured = states.filter((s) => s !== 'none');
  if (configured.length === 0) return 'none';
  if (configured.includes('pending')) return 'pending';
  return configured.every((s) => s === 'done') ? 'done' : 'failed';
}

/** Whether the event must keep holding: something still runs and the hold is not over. */
export function mustHold(pieces: Pieces, anyStintActive: boolean, holdOver: boolean): boolean {
  if (holdOver) return false;
  return anyStintActive || Object.values(pieces).includes('pending');
}

/**
 * The spec's definition, word for word: `complete` when the summary and the QA score are both
 * present, `partial` when one is, `timeout` when neither is. The analysis results are waited for
 * (mustHold) but do not enter the status: the spec names only the summary and the score.
 */
export function analysisStatus(pieces: Pieces, abandoned: boolean): AnalysisStatus {
  if (abandoned) return 'skipped';
  const present = (pieces.summary === 'done' ? 1 : 0) + (pieces.qa === 'done' ? 1 : 0);
  return present === 2 ? 'complete' : present === 1 ? 'partial' : 'timeout';
}
