/**
 * SQL of the analysis domain: schemas per agent and one result per (conversation, schema). Reads
 * are fenced by the caller (service.ts checks the workspace first); the job reads by id.
 */
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import type { AnalysisField } from './fields.js';
export { agentWorkspace, conversationWorkspace } from '../db/owners.js';

export interface SchemaRow {
  id: string;
  agent_id: string;
  workspace_id: string;
  name: string;
  description: string;
  fields: AnalysisField[];
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

export interface ResultRow {
  id: string;
  conversation_id: string;
  schema_id: string;
  schema_name: string;
  agent_id: string;
  workspace_id: string;
  status: 'complete' | 'failed';
  values: Record<string, unknown>;
  model: string;
  latency_ms: number;
  attempts: number;
  error: string | null;
  created_at: Date;
}

export type NewResult = Omit<ResultRow, 'schema_name' | 'created_at'>;

export async function insertSchema(sql: Sql, s: Omit<SchemaRow, 'created_at' | 'updated_at'>, now: Date): Promise<SchemaRow> {
  const [row] = await sql<SchemaRow[]>`
    insert into analysis_schemas (id, agent_id, workspace_id, name, description, fields, is_active, created_at, updated_at)
    values (${s.id}, ${s.agent_id}, ${s.workspace_id}, ${s.name}, ${s.description}, ${sql.json(s.fields as never)}, ${s.is_active}, ${now}, ${now})
    returning *`;
  return row;
}

export async function getSchema(sql: Sql, id: string): Promise<SchemaRow | undefined> {
  const [row] = await sql<SchemaRow[]>`select * from analysis_schemas where id = ${id}`;
  return row;
}

export function listSchemas(sql: Sql, agentId: string, opts: { activeOnly?: boolean } = {}): Promise<SchemaRow[]> {
  const active = opts.activeOnly ? sql`and is_active` : sql``;
  return sql<SchemaRow[]>`select * from analysis_schemas where agent_id = ${agentId} ${active} order by created_at, id`;
}

export interface SchemaPatch {
  name?: string;
  description?: string;
  fields?: AnalysisField[];
  is_active?: boolean;
}

export async function updateSchema(sql: Sql, id: string, p: SchemaPatch, now: Date): Promise<SchemaRow | undefined> {
  const fields = p.fields === undefined ? null : sql.json(p.fields as never);
  const [row] = await sql<SchemaRow[]>`
    update analysis_schemas set
      name = coalesce(${p.name ?? null}, name),
      description = coalesce(${p.description ?? null}, description),
      fields = coalesce(${fields}::jsonb, fields),
      is_active = coalesce(${p.is_active ?? null}, is_active),
      updated_at = ${now}
    where id = ${id} returning *`;
  return row;
}

export async function deleteSchema(sql: Sql, id: string): Promise<boolean> {
  const rows = await sql`delete from analysis_schemas where id = ${id} returning id`;
  return rows.length > 0;
}

/** Whether the conversation's agent has an active schema (the post-call handler, in its transaction). */
/** The active schemas of the conversation's agent (ids, oldest first). */
export async function activeSchemaIds(tx: SqlOrTx, conversationId: string): Promise<string[]> {
  const rows = await tx<{ id: string }[]>`
    select s.id from conversations c join analysis_schemas s on s.agent_id = c.agent_id and s.is_active
    where c.id = ${conversationId} order by s.created_at, s.id`;
  return rows.map((r) => r.id);
}

/** Inserts a result unless one exists for the pair (a retried job): true when this call stored it. */
export async function insertResult(sql: Sql, r: NewResult, now: Date): Promise<boolean> {
  const rows = await sql`
    insert into analysis_results (id, conversation_id, schema_id, agent_id, workspace_id, status, "values", model, latency_ms, attempts, error, created_at)
    values (${r.id}, ${r.conversation_id}, ${r.schema_id}, ${r.agent_id}, ${r.workspace_id}, ${r.status}, ${sql.json(r.values as never)},
            ${r.model}, ${r.latency_ms}, ${r.attempts}, ${r.error}, ${now})
    on conflict (conversation_id, schema_id) do nothing
    returning id`;
  return rows.length > 0;
}

/** Schema ids that already have a result for this conversation (the job skips them). */
export async function doneSchemaIds(sql: Sql, conversationId: string): Promise<Set<string>> {
  const rows = await sql<{ schema_id: string }[]>`select schema_id from analysis_results where conversation_id = ${conversationId}`;
  return new Set(rows.map((r) => r.schema_id));
}

export async function listResults(
  sql: Sql,
  by: { conversationId: string } | { agentId: string },
  page: { limit: number; offset: number },
): Promise<{ rows: ResultRow[]; total: number }> {
  const where = 'conversationId' in by ? sql`r.conversation_id = ${by.conversationId}` : sql`r.agent_id = ${by.agentId}`;
  const rows = await sql<ResultRow[]>`
    select r.*, s.name as schema_name from analysis_results r join analysis_schemas s on s.id = r.schema_id
    where ${where} order by r.created_at desc, r.id desc limit ${page.limit} offset ${page.offset}`;
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from analysis_results r where ${where}`;
  return { rows, total: n };
}
