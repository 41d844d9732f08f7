/**
 * SQL of the QA domain: rubrics per workspace, the agent -> active rubric binding, and one score
 * per conversation. Reads are fenced by the caller (service.ts checks the workspace first); the
 * job reads by id.
 */
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import type { CriterionScore, QaCriterion } from './criteria.js';
export { agentWorkspace, conversationWorkspace } from '../db/owners.js';

export interface RubricRow {
  id: string;
  workspace_id: string;
  name: string;
  description: string;
  criteria: QaCriterion[];
  pass_threshold: number;
  created_at: Date;
  updated_at: Date;
  agent_ids: string[];
}

export type ScoreStatus = 'pending' | 'scored' | 'failed' | 'reviewed';

export interface ScoreRow {
  id: string;
  conversation_id: string;
  workspace_id: string;
  agent_id: string;
  rubric_id: string | null;
  rubric_name: string;
  pass_threshold: number;
  status: ScoreStatus;
  criteria: CriterionScore[];
  overall_score: number | null;
  flagged: boolean;
  compliance_issue: boolean;
  compliance_note: string | null;
  model: string;
  latency_ms: number;
  attempts: number;
  error: string | null;
  reviewer_id: string | null;
  review_notes: string | null;
  reviewed_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

/** The bound agents of a rubric come along with every rubric read. */
const RUBRIC_COLS = (sql: Sql) => sql`r.*, coalesce((select array_agg(b.agent_id order by b.agent_id) from qa_rubric_bindings b where b.rubric_id = r.id), '{}') as agent_ids`;

export async function countRubrics(sql: Sql, workspaceId: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from qa_rubrics where workspace_id = ${workspaceId}`;
  return n;
}

export async function insertRubric(sql: Sql, r: Omit<RubricRow, 'created_at' | 'updated_at' | 'agent_ids'>, now: Date): Promise<RubricRow> {
  await sql`
    insert into qa_rubrics (id, workspace_id, name, description, criteria, pass_threshold, created_at, updated_at)
    values (${r.id}, ${r.workspace_id}, ${r.name}, ${r.description}, ${sql.json(r.criteria as never)}, ${r.pass_threshold}, ${now}, ${now})`;
  return (await getRubric(sql, r.id))!;
}

export async function getRubric(sql: Sql, id: string): Promise<RubricRow | undefined> {
  const [row] = await sql<RubricRow[]>`select ${RUBRIC_COLS(sql)} from qa_rubrics r where r.id = ${id}`;
  return row;
}

export function listRubrics(sql: Sql, workspaceId: string): Promise<RubricRow[]> {
  return sql<RubricRow[]>`select ${RUBRIC_COLS(sql)} from qa_rubrics r where r.workspace_id = ${workspaceId} order by r.created_at, r.id`;
}

export interface RubricPatch {
  name?: string;
  description?: string;
  criteria?: QaCriterion[];
  pass_threshold?: number;
}

export async function updateRubric(sql: Sql, id: string, p: RubricPatch, now: Date): Promise<RubricRow | undefined> {
  const criteria = p.criteria === undefined ? null : sql.json(p.criteria as never);
  const rows = await sql`
    update qa_rubrics set
      name = coalesce(${p.name ?? null}, name),
      description = coalesce(${p.description ?? null}, description),
      criteria = coalesce(${criteria}::jsonb, criteria),
      pass_threshold = coalesce(${p.pass_threshold ?? null}::double precision, pass_threshold),
      updated_at = ${now}
    where id = ${id} returning id`;
  return rows.length ? getRubric(sql, id) : undefined;
}

export async function deleteRubric(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`delete from qa_rubrics where id = ${id} returning id`;
  return rows.length > 0;
}

/** Makes the rubric the agent's active one (replacing another binding: one per agent). */
export async function bind(sql: Sql, rubricId: string, agentId: string, workspaceId: string, now: Date): Promise<void> {
  await sql`
    insert into qa_rubric_bindings (agent_id, rubric_id, workspace_id, bound_at) values (${agentId}, ${rubricId}, ${workspaceId}, ${now})
    on conflict (agent_id) do update set rubric_id = excluded.rubric_id, workspace_id = excluded.workspace_id, bound_at = excluded.bound_at`;
}

/** True when this rubric was the agent's active one. */
export async function unbind(sql: Sql, rubricId: string, agentId: string): Promise<boolean> {
  const rows = await sql`delete from qa_rubric_bindings where agent_id = ${agentId} and rubric_id = ${rubricId} returning agent_id`;
  return rows.length > 0;
}

export async function activeRubric(sql: SqlOrTx, agentId: string): Promise<RubricRow | undefined> {
  const [row] = await (sql as Sql)<RubricRow[]>`
    select ${RUBRIC_COLS(sql as Sql)} from qa_rubrics r join qa_rubric_bindings b on b.rubric_id = r.id where b.agent_id = ${agentId}`;
  return row;
}

/**
 * The post-call handler, in the relay's transaction: a completed conversation whose agent has an
 * active rubric gets its `pending` score row (what the webhook's hold waits for). True when the
 * row is new, i.e. the job must be queued; a second trigger finds it and adds nothing.
 */
export async function insertPending(tx: SqlOrTx, id: string, conversationId: string, now: Date): Promise<boolean> {
  const rows = await (tx as Sql)`
    insert into qa_scores (id, conversation_id, workspace_id, agent_id, rubric_id, rubric_name, pass_threshold, status, created_at, updated_at)
    select ${id}, c.id, c.workspace_id, c.agent_id, r.id, r.name, r.pass_threshold, 'pending', ${now}, ${now}
    from conversations c join qa_rubric_bindings b on b.agent_id = c.agent_id join qa_rubrics r on r.id = b.rubric_id
    where c.id = ${conversationId}
    on conflict (conversation_id) do nothing
    returning id`;
  return rows.length > 0;
}

export async function scoreOfConversation(sql: Sql, conversationId: string): Promise<ScoreRow | undefined> {
  const [row] = await sql<ScoreRow[]>`select * from qa_scores where conversation_id = ${conversationId}`;
  return row;
}

export async function getScore(sql: Sql, id: string): Promise<ScoreRow | undefined> {
  const [row] = await sql<ScoreRow[]>`select * from qa_scores where id = ${id}`;
  return row;
}

export type Outcome = Pick<
  ScoreRow,
  'rubric_id' | 'rubric_name' | 'pass_threshold' | 'criteria' | 'overall_score' | 'flagged' | 'compliance_issue' | 'compliance_note' | 'model' | 'latency_ms' | 'attempts' | 'error'
> & { status: 'scored' | 'failed' };

/**
 * Records the job's outcome on the conversation's row, once: an upsert keyed by the unique
 * conversation, which only moves a `pending` row (a retried or duplicated job finds it decided and
 * changes nothing). Returns whether this call decided it.
 */
export async function saveOutcome(sql: Sql, ids: { id: string; conversation_id: string; workspace_id: string; agent_id: string }, o: Outcome, now: Date): Promise<boolean> {
  const rows = await sql`
    insert into qa_scores (id, conversation_id, workspace_id, agent_id, rubric_id, rubric_name, pass_threshold, status, criteria, overall_score,
                           flagged, compliance_issue, compliance_note, model, latency_ms, attempts, error, created_at, updated_at)
    values (${ids.id}, ${ids.conversation_id}, ${ids.workspace_id}, ${ids.agent_id}, ${o.rubric_id}, ${o.rubric_name}, ${o.pass_threshold}, ${o.status},
            ${sql.json(o.criteria as never)}, ${o.overall_score}, ${o.flagged}, ${o.compliance_issue}, ${o.compliance_note}, ${o.model}, ${o.latency_ms},
            ${o.attempts}, ${o.error}, ${now}, ${now})
    on conflict (conversation_id) do update set
      rubric_id = excluded.rubric_id, rubric_name = excluded.rubric_name, pass_threshold = excluded.pass_threshold, status = excluded.status,
      criteria = excluded.criteria, overall_score = excluded.overall_score, flagged = excluded.flagged, compliance_issue = excluded.compliance_issue,
      compliance_note = excluded.compliance_note, model = excluded.model, latency_ms = excluded.latency_ms, attempts = excluded.attempts,
      error = excluded.error, updated_at = excluded.updated_at
    where qa_scores.status = 'pending'
    returning id`;
  return rows.length > 0;
}

/** A reviewed score keeps the model's criteria, overall score and flag; only the review columns change. */
export async function review(sql: Sql, id: string, reviewerId: string, notes: string | null, now: Date): Promise<boolean> {
  const rows = await sql`
    update qa_scores set status = 'reviewed', reviewer_id = ${reviewerId}, review_notes = ${notes}, reviewed_at = ${now}, updated_at = ${now}
    where id = ${id} and status in ('scored', 'reviewed') returning id`;
  return rows.length > 0;
}

/** Decided scores (pending rows are not scores yet), newest first. */
export async function listScores(
  sql: Sql,
  by: { conversationId: string } | { workspaceId: string; agentId?: string },
  page: { limit: number; offset: number },
): Promise<{ rows: ScoreRow[]; total: number }> {
  const where =
    'conversationId' in by
      ? sql`conversation_id = ${by.conversationId}`
      : by.agentId
        ? sql`workspace_id = ${by.workspaceId} and agent_id = ${by.agentId}`
        : sql`workspace_id = ${by.workspaceId}`;
  const rows = await sql<ScoreRow[]>`
    select * from qa_scores where ${where} and status <> 'pending' order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`;
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from qa_scores where ${where} and status <> 'pending'`;
  return { rows, total: n };
}
