/**
 * One batch of queued record operations -> a few multi-row statements in one transaction, in
 * dependency order (conversations, messages, tool calls, pipeline events, audio paths, call ends). Every statement
 * is idempotent, so a batch whose commit was lost in transit is safely retried:
 * inserts are `on conflict (id) do nothing`, the call end is an upsert of the final row state
 * (an end already recorded keeps its status and `ended_at`), audio paths are plain updates.
 */
import type postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';
import type { ConversationRecordRow, MessageRow, PipelineEventRow, ToolCallRow } from '../../shared/records/rows.js';

export type RecordOp =
  | { kind: 'start'; seq: number; row: ConversationRecordRow }
  | { kind: 'message'; seq: number; row: MessageRow }
  | { kind: 'tool_call'; seq: number; row: ToolCallRow }
  /** A turn's pipeline events: one op (one queue slot) per turn, rows inserted together. */
  | { kind: 'pipeline_events'; seq: number; rows: PipelineEventRow[] }
  | { kind: 'audio'; seq: number; messageId: string; path: string }
  | { kind: 'end'; seq: number; row: ConversationRecordRow };

export type { Sql };
/** The pool or a transaction. */
type AnySqlOrTx = Sql | postgres.TransactionSql<Record<string, unknown>>;

/** Rows written per kind (for stats). */
export interface BatchResult {
  rows: number;
}

/** Writes a batch in one transaction. Throws the database error (the caller classifies it). */
export async function writeBatch(sql: Sql, ops: RecordOp[]): Promise<BatchResult> {
  const starts = dedupe(ops.flatMap((o) => (o.kind === 'start' ? [o.row] : [])));
  const messages = dedupe(ops.flatMap((o) => (o.kind === 'message' ? [o.row] : [])));
  const toolCalls = dedupe(ops.flatMap((o) => (o.kind === 'tool_call' ? [o.row] : [])));
  const events = dedupe(ops.flatMap((o) => (o.kind === 'pipeline_events' ? o.rows : [])));
  const audio = ops.flatMap((o) => (o.kind === 'audio' ? [[o.messageId, o.path]] : []));
  const ends = dedupe(ops.flatMap((o) => (o.kind === 'end' ? [o.row] : [])));
  await sql.begin(async (tx) => {
    if (starts.length) await insertConversations(tx, starts);
    if (messages.length) await insertMessages(tx, messages);
    if (toolCalls.length) await insertToolCalls(tx, toolCalls);
    if (events.length) await insertPipelineEvents(tx, events);
    if (audio.length) await setAudioPaths(tx, audio as Array<[string, string]>);
    if (ends.length) await upsertEnds(tx, ends);
  });
  return { rows: starts.length + messages.length + toolCalls.length + events.length + audio.length + ends.length };
}

/** Writes one operation on its own (used to isolate a batch the database rejected). */
export async function writeOne(sql: Sql, op: RecordOp): Promise<void> {
  if (op.kind === 'start') await insertConversations(sql, [op.row]);
  else if (op.kind === 'message') await insertMessages(sql, [op.row]);
  else if (op.kind === 'tool_call') await insertToolCalls(sql, [op.row]);
  else if (op.kind === 'pipeline_events') {
    if (op.rows.length) await insertPipelineEvents(sql, op.rows);
  }
  else if (op.kind === 'audio') await setAudioPaths(sql, [[op.messageId, op.path]]);
  else await upsertEnds(sql, [op.row]);
}

function insertConversations(sql: AnySqlOrTx, rows: ConversationRecordRow[]) {
  return sql`insert into conversations ${sql(rows as never)} on conflict (id) do nothing`;
}

function insertMessages(sql: AnySqlOrTx, rows: MessageRow[]) {
  return sql`insert into messages ${sql(rows as never)} on conflict (id) do nothing`;
}

function insertToolCalls(sql: AnySqlOrTx, rows: ToolCallRow[]) {
  return sql`insert into tool_calls ${sql(rows as never)} on conflict (id) do nothing`;
}

function insertPipelineEvents(sql: AnySqlOrTx, rows: PipelineEventRow[]) {
  return sql`insert into pipeline_events ${sql(rows as never)} on conflict (id) do nothing`;
}

function setAudioPaths(sql: AnySqlOrTx, pairs: Array<[string, string]>) {
  return sql`
    update messages m set audio_path = v.path
    from (values ${sql(pairs as never)}) as v (id, path)
    where m.id = v.id::uuid`;
}

/**
 * The end lands on the row whatever came first, but a row already ended (a `PUT` with `completed`,
 * the node or abandoned-call sweeper) keeps its terminal status and its `ended_at`: completed and
 * failed are final, and the post-call work already ran for that end. The engine's totals still
 * land (it counted the turns).
 */
function upsertEnds(sql: AnySqlOrTx, rows: ConversationRecordRow[]) {
  return sql`
    insert into conversations ${sql(rows as never)}
    on conflict (id) do update set
      status = case when conversations.status = 'active' then excluded.status else conversations.status end,
      total_turns = excluded.total_turns,
      total_duration_ms = excluded.total_duration_ms,
      avg_response_latency_ms = excluded.avg_response_latency_ms,
      metadata = conversations.metadata || excluded.metadata,
      ended_at = coalesce(conversations.ended_at, excluded.ended_at),
      updated_at = excluded.updated_at`;
}

/** One row per id (last wins): `on conflict do update` may not touch a row twice in one statement. */
function dedupe<T extends { id: string }>(rows: T[]): T[] {
  if (rows.length < 2) return rows;
  const byId = new Map<string, T>();
  for (const r of rows) byId.set(r.id, r);
  return byId.size === rows.length ? rows : [...byId.values()];
}

/**
 * Whether a failed write should be retried as is. Data and constraint errors (SQLSTATE classes 22
 * and 23) and client-side serialisation errors will fail again: the batch is isolated op by op
 * instead. Everything else (connection
 * loss, timeouts, shutdown, serialization) is retried with backoff.
 */
export function isRetryable(err: unknown): boolean {
  // Raised on our side while serialising a row (e.g. a BigInt in a tool output): never heals.
  if (err instanceof TypeError || err instanceof RangeError) return false;
  const code = (err as { code?: unknown })?.code;
  if (typeof code === 'string' && /^[0-9A-Z]{5}$/.test(code)) {
    const cls = code.slice(0, 2);
    return cls !== '22' && cls !== '23';
  }
  return true;
}

/** The ids of one op, for the log line when the database rejects it (never the row contents). */
export function describeOp(op: RecordOp): Record<string, unknown> {
  if (op.kind === 'audio') return { kind: op.kind, messageId: op.messageId };
  if (op.kind === 'pipeline_events') return { kind: op.kind, conversationId: op.rows[0]?.conversation_id, rows: op.rows.length };
  return { kind: op.kind, id: op.row.id };
}
