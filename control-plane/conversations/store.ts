/**
 * SQL of the conversations domain. Every read is fenced by the caller's workspace ids (`ws`):
 * a row outside them is indistinguishable from a missing one.
 */
import type { Sql } from '../../shared/db/client.js';
import type { Page } from '../http/pagination.js';
import type { ConversationStatus } from './fields.js';
import type { ConversationRow, MessageRow, ToolCallRow, SegmentKind } from '../../shared/records/rows.js';

// One definition of the rows (shared/records/rows.ts): the engine's writer produces them.
export type { ConversationRow, MessageRow, ToolCallRow };

/** A list row: the earliest stint of its call plus the call-level aggregates (null when not part of a call). */
export interface ListRow extends ConversationRow {
  g_sessions: number | null;
  g_any_active: boolean | null;
  g_last_status: ConversationStatus | null;
  g_kinds: SegmentKind[] | null;
  g_turns: number | null;
  g_duration: number | null;
  g_latency_weighted: number | null;
  g_latency_avg: number | null;
  g_ended_at: Date | null;
  g_all_ended: boolean | null;
}


export interface ListFilter {
  ws: string[];
  agentId?: string;
  userId?: string;
  status?: ConversationStatus;
}

/**
 * One page of the folded list, newest call first. A row is the earliest stint of its call (or a
 * conversation without `call_id`); the call's stints are aggregated for the page's rows only.
 * `agent_id` and `user_id` match when any stint of the call matches; `status` matches the folded
 * status (active while any stint is active, else the latest stint's status).
 *
 * Cost: the page is read in list order from `conversations_ws_started_idx` and stops after
 * offset + limit rows (a one-workspace caller compares with `=`, so the index gives the order);
 * the stints of a call are looked up by `conversations_call_idx` for call rows only. The total
 * (required by the API's `meta`) still counts every matching row, in the same round trip; without
 * filters from `conversations_ws_call_idx` alone.
 * Aggregating every row before the LIMIT, as this did before, took 400 ms for a workspace of
 * 100,000 conversations (1 s with Postgres' JIT, now off on our connections: db/client.ts).
 */
export async function listConversations(sql: Sql, f: ListFilter, p: Page): Promise<{ rows: ListRow[]; total: number }> {
  const inWs = (alias: 'c' | 's' | 'e') => (f.ws.length === 1 ? sql`${sql(`${alias}.workspace_id`)} = ${f.ws[0]}::uuid` : sql`${sql(`${alias}.workspace_id`)} = any(${f.ws}::uuid[])`);
  const anyStint = (column: 'agent_id' | 'user_id', value: string) => sql`
    exists (select 1 from conversations s where s.call_id = c.call_id and ${inWs('s')} and ${sql(`s.${column}`)} = ${value})`;
  // The rows of the list: first stints (or no call), then the filters on the folded call.
  const matching = () => sql`
    from conversations c
    where ${inWs('c')}
      and (c.call_id is null or not exists (
        select 1 from conversations e
        where e.call_id = c.call_id and ${inWs('e')}
          and (e.started_at < c.started_at or (e.started_at = c.started_at and e.id < c.id))))
      ${f.agentId ? sql`and (c.agent_id = ${f.agentId} or (c.call_id is not null and ${anyStint('agent_id', f.agentId)}))` : sql``}
      ${f.userId ? sql`and (c.user_id = ${f.userId} or (c.call_id is not null and ${anyStint('user_id', f.userId)}))` : sql``}
      ${
        f.status
          ? sql`and (case when c.call_id is null then c.status else (
              select case when bool_or(s.status = 'active') then 'active' else (array_agg(s.status order by s.started_at desc, s.id desc))[1] end
              from conversations s where s.call_id = c.call_id and ${inWs('s')}) end) = ${f.status}`
          : sql``
      }`;
  // Without filters a call is one row whatever its first stint: count distinct calls and the
  // conversations without one, by conversations_ws_call_idx (no anti-join per call).
  const total = () =>
    f.agentId || f.userId || f.status
      ? sql`(select count(*)::int ${matching()})`
      : sql`((select count(*)::int from conversations c where ${inWs('c')} and c.call_id is null)
            + (select count(distinct c.call_id)::int from conversations c where ${inWs('c')} and c.call_id is not null))`;
  // Page and total in one round trip (issue 13: one query per request).
  const rows = await sql<(ListRow & { g_total: number })[]>`
    with page as (select c.* ${matching()} order by c.started_at desc, c.id desc limit ${p.limit} offset ${p.offset})
    select c.*, g.g_sessions, g.g_any_active, g.g_last_status, g.g_kinds, g.g_turns, g.g_duration,
           g.g_latency_weighted, g.g_latency_avg, g.g_ended_at, g.g_all_ended,
           ${total()} as g_total
    from page c
    left join lateral (
      select count(*)::int as g_sessions,
             bool_or(s.status = 'active') as g_any_active,
             (array_agg(s.status order by s.started_at desc, s.id desc))[1] as g_last_status,
             array_agg(s.segment_kind order by s.started_at, s.id) as g_kinds,
             sum(s.total_turns)::bigint as g_turns,
             sum(s.total_duration_ms)::bigint as g_duration,
             sum(s.avg_response_latency_ms::bigint * s.total_turns)::bigint as g_latency_weighted,
             avg(s.avg_response_latency_ms)::float8 as g_latency_avg,
             max(s.ended_at) as g_ended_at,
             bool_and(s.ended_at is not null) as g_all_ended
      from conversations s
      where s.call_id = c.call_id and ${inWs('s')}
    ) g on c.call_id is not null
    order by c.started_at desc, c.id desc`;
  if (rows.length) return { rows, total: rows[0].g_total };
  if (p.offset === 0) return { rows, total: 0 };
  const [{ n }] = await sql<{ n: number }[]>`select ${total()} as n`;
  return { rows, total: n };
}

export async function getConversation(sql: Sql, ws: string[], id: string): Promise<ConversationRow | undefined> {
  const [row] = await sql<ConversationRow[]>`select * from conversations where id = ${id} and workspace_id = any(${ws}::uuid[])`;
  return row;
}

/**
 * The conversation of a session among the caller's workspaces. Session ids are unique per
 * workspace, so several of `ws` may hold one: `preferWs`'s row first, then the earliest started.
 */
export async function getConversationBySession(sql: Sql, ws: string[], sessionId: string, preferWs?: string): Promise<ConversationRow | undefined> {
  const [row] = await sql<ConversationRow[]>`
    select * from conversations where session_id = ${sessionId} and workspace_id = any(${ws}::uuid[])
    order by workspace_id = ${preferWs ?? null}::uuid desc nulls last, started_at, id
    limit 1`;
  return row;
}

export function listMessages(sql: Sql, conversationId: string): Promise<MessageRow[]> {
  return sql<MessageRow[]>`
    select * from messages where conversation_id = ${conversationId}
    order by turn_number, (role = 'assistant'), created_at, id`;
}

export function listToolCalls(sql: Sql, conversationId: string): Promise<ToolCallRow[]> {
  return sql<ToolCallRow[]>`select * from tool_calls where conversation_id = ${conversationId} order by created_at, id`;
}

export interface SummaryRow {
  total: number;
  active: number;
  completed: number;
  failed: number;
  total_turns: number;
  total_duration_ms: number;
  avg_latency_ms: number;
}

/** Per conversation row (stint); `avg_latency_ms` is turn-weighted. */
export async function summarize(sql: Sql, workspaceId: string, f: { status?: string; agentId?: string }): Promise<SummaryRow> {
  const [row] = await sql<SummaryRow[]>`
    select count(*)::int as total,
           (count(*) filter (where status = 'active'))::int as active,
           (count(*) filter (where status = 'completed'))::int as completed,
           (count(*) filter (where status = 'failed'))::int as failed,
           coalesce(sum(total_turns), 0)::float8 as total_turns,
           coalesce(sum(total_duration_ms), 0)::float8 as total_duration_ms,
           coalesce(round(sum(avg_response_latency_ms::numeric * total_turns) / nullif(sum(total_turns), 0)), 0)::int as avg_latency_ms
    from conversations
    where workspace_id = ${workspaceId}
      ${f.status ? sql`and status = ${f.status}` : sql``}
      ${f.agentId ? sql`and agent_id = ${f.agentId}` : sql``}`;
  return row;
}

/** The agent's workspace, when it is one of `ws`. */
export async function agentWorkspace(sql: Sql, ws: string[], agentId: string): Promise<string | undefined> {
  const [row] = await sql<{ workspace_id: string }[]>`
    select workspace_id from agents where id = ${agentId} and workspace_id = any(${ws}::uuid[])`;
  return row?.workspace_id;
}

export async function countForAgent(sql: Sql, ws: string[], agentId: string): Promise<number> {
  const [{ n }] = await sql<{ n: number }[]>`
    select count(*)::int as n from conversations where agent_id = ${agentId} and workspace_id = any(${ws}::uuid[])`;
  return n;
}
