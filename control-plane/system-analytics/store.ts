/**
 * The three record aggregates in SQL, over the conversation records the engine already writes.
 * Each starts from the caller's conversations (`scope`: workspaces, a date range on `started_at`,
 * optionally one agent / user, or one session whatever its date) through the
 * `conversations_ws_*` indexes, then reads their messages / tool calls through the covering
 * indexes of migration 0010 (index-only). Plans and timings: docs/system-analytics.md.
 */
import type postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';
export { agentWorkspace } from '../db/owners.js';

/** At most this many usage rows (users, most conversations first): the bound on one answer. */
export const MAX_USAGE_ROWS = 200;
/** At most this many latency / tool rows (a deployment has a handful of providers and tools). */
export const MAX_GROUP_ROWS = 500;

export interface Scope {
  ws: string[];
  agentId?: string;
  userId?: string;
  sessionId?: string;
  start: Date;
  end: Date;
}

export interface LatencyRow {
  metric_type: string;
  component: string;
  provider: string;
  model: string;
  avg_latency_ms: number;
  count: number;
}

export interface UsageRow {
  user_id: string;
  total_sessions: number;
  total_conversations: number;
  total_messages: number;
  total_duration_ms: number;
  avg_latency_ms: number;
  p95_latency_ms: number;
  p99_latency_ms: number;
  /** Users in range before the MAX_USAGE_ROWS cap (the same on every row). */
  total_users: number;
}

export interface ToolRow {
  tool_name: string;
  call_count: number;
  success_count: number;
  error_count: number;
  success_rate: number;
  avg_latency_ms: number;
  min_latency_ms: number;
  max_latency_ms: number;
  p50_latency_ms: number;
  p95_latency_ms: number;
}

type Fragment = postgres.PendingQuery<postgres.Row[]>;

/** The caller's conversations the aggregate covers (alias `c`). */
function scoped(sql: Sql, s: Scope): Fragment {
  const agent = s.agentId ? sql`and c.agent_id = ${s.agentId}` : sql``;
  if (s.sessionId) return sql`c.workspace_id = any(${s.ws}::uuid[]) and c.session_id = ${s.sessionId} ${agent}`;
  const user = s.userId ? sql`and c.user_id = ${s.userId}` : sql``;
  return sql`c.workspace_id = any(${s.ws}::uuid[]) and c.started_at >= ${s.start} and c.started_at < ${s.end} ${agent} ${user}`;
}

/**
 * Transaction-local settings, as for the pipeline aggregates (control-plane/analytics/store.ts):
 * enough `work_mem` for the percentile sorts of a busy range, and no JIT (its compile time
 * exceeded the query time on large slices). Plus a fresh plan per call: postgres.js prepares
 * statements, and after five runs Postgres may keep a generic plan that cannot see how wide the
 * workspace list and the date range are (a session and a whole quarter share one statement).
 */
async function inAnalyticsTx<T>(sql: Sql, run: (tx: Sql) => Promise<T>): Promise<T> {
  return (await sql.begin(async (tx) => {
    await tx.unsafe(`set local work_mem = '64MB'`);
    await tx.unsafe(`set local jit = off`);
    await tx.unsafe(`set local plan_cache_mode = force_custom_plan`);
    return run(tx as unknown as Sql);
  })) as T;
}

// The scoped conversations are a CTE written \`not materialized\`: each use is planned inline
// with its join (a materialized CTE is opaque to the planner and kept the quarter-wide latency
// query off parallel plans: 1.6 s instead of ~0.45 s in the bench).

/**
 * One pass over the messages, aggregated to sums and counts per provider/model combination
 * first (a few groups), then unpivoted per component and combined: unpivoting each message
 * instead made five rows of every message and cost ~4x more on a quarter of data (bench). ASR
 * comes from the caller rows (the reply row repeats its latency), the rest from the reply rows. A
 * reply cut before any audio has `total_latency_ms` 0: it is left out of `total_latency` as the
 * call's own average does (media-engine/session/turn-accounting.ts). Tools from `tool_calls`.
 */
export function latency(sql: Sql, s: Scope): Promise<LatencyRow[]> {
  // ASR: caller rows with ASR time (typed-in text has none: 0, as pipeline analytics leaves it
  // out); the other components: reply rows only (a caller row may carry them, e.g. via the API).
  return inAnalyticsTx(sql, (tx) => tx<LatencyRow[]>`
    with conv as not materialized (select c.id from conversations c where ${scoped(tx, s)}),
    per_combo as (
      select m.asr_provider, m.asr_model, m.llm_provider, m.llm_model, m.tts_provider,
        count(m.asr_latency_ms) filter (where m.role = 'user' and m.asr_latency_ms > 0) as asr_n, sum(m.asr_latency_ms) filter (where m.role = 'user' and m.asr_latency_ms > 0) as asr_sum,
        count(m.llm_latency_ms) filter (where m.role = 'assistant') as llm_n, sum(m.llm_latency_ms) filter (where m.role = 'assistant') as llm_sum,
        count(m.tts_latency_ms) filter (where m.role = 'assistant') as tts_n, sum(m.tts_latency_ms) filter (where m.role = 'assistant') as tts_sum,
        count(nullif(m.total_latency_ms, 0)) filter (where m.role = 'assistant') as total_n, sum(nullif(m.total_latency_ms, 0)) filter (where m.role = 'assistant') as total_sum,
        count(m.internal_overhead_ms) filter (where m.role = 'assistant') as ov_n, sum(m.internal_overhead_ms) filter (where m.role = 'assistant') as ov_sum
      from conv join messages m on m.conversation_id = conv.id
      group by 1, 2, 3, 4, 5
    ),
    parts as (
      select x.metric_type, x.component, x.provider, x.model, x.n, x.total
      from per_combo cross join lateral (values
        ('asr_latency', 'asr', asr_provider, asr_model, asr_n, asr_sum),
        ('llm_latency', 'llm', llm_provider, llm_model, llm_n, llm_sum),
        ('tts_latency', 'tts', tts_provider, null, tts_n, tts_sum),
        ('total_latency', 'turn', null, null, total_n, total_sum),
        ('internal_overhead', 'turn', null, null, ov_n, ov_sum)
      ) as x(metric_type, component, provider, model, n, total)
      where x.n > 0
      union all
      select 'tool_latency', 'tool', t.tool_name, null, count(*), sum(t.latency_ms)
      from conv join tool_calls t on t.conversation_id = conv.id
      group by t.tool_name
    )
    select metric_type, component, coalesce(provider, '') as provider, coalesce(model, '') as model,
      round(sum(total)::numeric / sum(n), 2)::float8 as avg_latency_ms, sum(n)::int as count
    from parts
    group by 1, 2, 3, 4
    order by 1, 2, 3, 4
    limit ${MAX_GROUP_ROWS}`);
}

/**
 * Per user id: calls (a transferred call's stints share `call_id` and count once), conversation
 * rows, messages, summed duration, and the reply latency (`total_latency_ms` > 0) mean and
 * continuous percentiles.
 */
export function usage(sql: Sql, s: Scope): Promise<UsageRow[]> {
  return inAnalyticsTx(sql, (tx) => tx<UsageRow[]>`
    with conv as not materialized (
      select c.id, coalesce(c.user_id, '') as user_id, coalesce(c.call_id::text, c.session_id) as call_key, c.total_duration_ms
      from conversations c where ${scoped(tx, s)}
    ),
    per_user as (
      select user_id, count(distinct call_key)::int as total_sessions, count(*)::int as total_conversations,
        sum(total_duration_ms)::float8 as total_duration_ms,
        (count(*) over ())::int as total_users
      from conv group by user_id
      order by total_conversations desc, user_id
      limit ${MAX_USAGE_ROWS}
    ),
    msgs as (
      select conv.user_id, count(*)::int as total_messages,
        avg(m.total_latency_ms) filter (where m.role = 'assistant' and m.total_latency_ms > 0) as avg_ms,
        percentile_cont(0.95) within group (order by m.total_latency_ms) filter (where m.role = 'assistant' and m.total_latency_ms > 0) as p95_ms,
        percentile_cont(0.99) within group (order by m.total_latency_ms) filter (where m.role = 'assistant' and m.total_latency_ms > 0) as p99_ms
      from conv join messages m on m.conversation_id = conv.id
      where conv.user_id in (select user_id from per_user)
      group by conv.user_id
    )
    select u.user_id, u.total_sessions, u.total_conversations, coalesce(g.total_messages, 0)::int as total_messages, u.total_users,
      u.total_duration_ms,
      coalesce(round(g.avg_ms::numeric, 2), 0)::float8 as avg_latency_ms,
      coalesce(round(g.p95_ms::numeric, 2), 0)::float8 as p95_latency_ms,
      coalesce(round(g.p99_ms::numeric, 2), 0)::float8 as p99_latency_ms
    from per_user u left join msgs g on g.user_id = u.user_id
    order by u.total_conversations desc, u.user_id`);
}

/** Per tool name; anything but `success` counts as an error (the engine writes `success` / `error`). */
export function toolCalls(sql: Sql, s: Scope): Promise<ToolRow[]> {
  return inAnalyticsTx(sql, (tx) => tx<ToolRow[]>`
    with conv as not materialized (select c.id from conversations c where ${scoped(tx, s)})
    select t.tool_name, count(*)::int as call_count,
      (count(*) filter (where t.status = 'success'))::int as success_count,
      (count(*) filter (where t.status <> 'success'))::int as error_count,
      round((count(*) filter (where t.status = 'success'))::numeric / count(*), 4)::float8 as success_rate,
      round(avg(t.latency_ms)::numeric, 2)::float8 as avg_latency_ms,
      min(t.latency_ms)::float8 as min_latency_ms,
      max(t.latency_ms)::float8 as max_latency_ms,
      round((percentile_cont(0.5) within group (order by t.latency_ms))::numeric, 2)::float8 as p50_latency_ms,
      round((percentile_cont(0.95) within group (order by t.latency_ms))::numeric, 2)::float8 as p95_latency_ms
    from conv join tool_calls t on t.conversation_id = conv.id
    group by t.tool_name
    order by t.tool_name
    limit ${MAX_GROUP_ROWS}`);
}

/** Whether the session has a conversation in scope (same workspaces and agent filter). */
export async function sessionVisible(sql: Sql, s: Scope & { sessionId: string }): Promise<boolean> {
  const [row] = await sql<{ n: number }[]>`select count(*)::int as n from conversations c where ${scoped(sql, s)}`;
  return (row?.n ?? 0) > 0;
}
