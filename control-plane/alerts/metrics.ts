/**
 * The metric set, computed from what the platform already records (definitions: docs/alerts.md):
 *
 * - Conversation data (`p95_latency_ms`, `error_rate`, `tool_error_rate`) is read through the
 *   conversations that overlap the window (`conversations_ws_ended_idx` / `..._ws_agent_idx`),
 *   then their rows by `conversation_id` indexes, filtered to the window. One evaluation reads
 *   at most the window (a day at most) of one workspace.
 * - Live state (`active_calls`, `node_down`) comes from the registry: live carrier calls of the
 *   workspace's seat pool, and engine node heartbeats.
 *
 * Ratios are percentages (0-100) and every value is rounded to 2 decimals. A ratio or percentile
 * over an empty window is `null` ("no data"): it never fires and it clears an active event.
 */
import type { Sql } from '../../shared/db/client.js';
import type { Registry } from '../../shared/registry/index.js';
import { MAX_WINDOW_MINUTES, type Component, type Metric, type Scope } from './rules.js';

export interface MetricQuery {
  workspaceId: string;
  metric: Metric;
  component: Component | '';
  scope: Scope;
  windowMinutes: number;
  /** End of the window (the evaluator's clock), exclusive. */
  nowMs: number;
}

export interface MetricDeps {
  sql: Sql;
  registry: Pick<Registry, 'calls' | 'nodes'>;
}

/** Message column per p95 component: every one of them is on the reply (assistant) row. */
const LATENCY_COLUMN: Record<Component, string> = {
  asr: 'asr_latency_ms',
  llm: 'llm_latency_ms',
  tts: 'tts_latency_ms',
  total: 'total_latency_ms',
};

export async function computeMetric(deps: MetricDeps, q: MetricQuery): Promise<number | null> {
  const { sql } = deps;
  const end = new Date(q.nowMs);
  const start = new Date(q.nowMs - q.windowMinutes * 60_000);
  const agent = q.scope.type === 'agent' ? sql`and c.agent_id = ${q.scope.agentId}` : sql``;
  // Conversations that overlap [start, end): their rows in the window are the metric's input.
  const overlapping = sql`
    select c.id from conversations c
    where c.workspace_id = ${q.workspaceId} ${agent}
      and c.started_at < ${end} and (c.ended_at is null or c.ended_at >= ${start})`;
  switch (q.metric) {
    case 'p95_latency_ms': {
      const col = sql(LATENCY_COLUMN[(q.component || 'total') as Component]);
      const [r] = await sql<{ v: number | null }[]>`
        select percentile_cont(0.95) within group (order by m.${col})::float8 as v
        from messages m
        where m.conversation_id in (${overlapping}) and m.role = 'assistant'
          and m.created_at >= ${start} and m.created_at < ${end} and m.${col} is not null
          and (${(q.component || 'total') !== 'total'} or m.${col} > 0)`;
      // Total: a reply cut before any audio (0) has no wait to measure, as in system analytics.
      return round(r?.v);
    }
    case 'error_rate': {
      const [r] = await sql<{ v: number | null }[]>`
        select (100.0 * count(*) filter (where e.status = 'error') / nullif(count(*), 0))::float8 as v
        from pipeline_events e
        where e.conversation_id in (${overlapping}) and e.created_at >= ${start} and e.created_at < ${end}`;
      return round(r?.v);
    }
    case 'tool_error_rate': {
      const [r] = await sql<{ v: number | null }[]>`
        select (100.0 * count(*) filter (where t.status <> 'success') / nullif(count(*), 0))::float8 as v
        from tool_calls t
        where t.conversation_id in (${overlapping}) and t.created_at >= ${start} and t.created_at < ${end}`;
      return round(r?.v);
    }
    case 'call_volume': {
      // Stints of one transferred call share `call_id`: a call counts once.
      const [r] = await sql<{ v: number }[]>`
        select count(distinct coalesce(c.call_id, c.id))::int as v from conversations c
        where c.workspace_id = ${q.workspaceId} ${agent} and c.started_at >= ${start} and c.started_at < ${end}`;
      return r?.v ?? 0;
    }
    case 'failed_call_rate': {
      const [r] = await sql<{ v: number | null }[]>`
        select (100.0 * count(*) filter (where c.status = 'failed') / nullif(count(*), 0))::float8 as v
        from conversations c
        where c.workspace_id = ${q.workspaceId} ${agent} and c.ended_at >= ${start} and c.ended_at < ${end}`;
      return round(r?.v);
    }
    case 'webhook_dead_count': {
      const [r] = await sql<{ v: number }[]>`
        select count(*)::int as v from webhook_deliveries
        where workspace_id = ${q.workspaceId} and status = 'dead' and not test
          and updated_at >= ${start} and updated_at < ${end}`;
      return r?.v ?? 0;
    }
    case 'active_calls': {
      const calls = await deps.registry.calls.listCalls({ poolId: q.workspaceId });
      return q.scope.type === 'agent' ? calls.filter((c) => c.data.agent_id === q.scope.agentId).length : calls.length;
    }
    case 'node_down': {
      const live = new Set((await deps.registry.nodes.listNodes()).map((n) => n.nodeId));
      const seen = await sql<{ node_id: string }[]>`select node_id from alert_engine_nodes where last_seen_at >= ${start} and left_at is null`;
      return seen.filter((n) => !live.has(n.node_id)).length;
    }
  }
}

/**
 * Records the live engine nodes as seen (the evaluator, once per tick), so `node_down` can count
 * a node after the registry has forgotten it. Not called by `/alerts/test` (no side effects).
 */
export async function recordLiveNodes(deps: MetricDeps, nowMs: number): Promise<void> {
  const ids = (await deps.registry.nodes.listNodes()).map((n) => n.nodeId);
  // Past the longest window a row counts for nothing: bounded by the nodes of the last day.
  await deps.sql`delete from alert_engine_nodes where last_seen_at < ${new Date(nowMs - MAX_WINDOW_MINUTES * 60_000)}`;
  if (!ids.length) return;
  // A node that left (left_at, set by its close) stays left: this listing may predate its leaving.
  await deps.sql`
    insert into alert_engine_nodes (node_id, last_seen_at)
    select id, ${new Date(nowMs)} from unnest(${deps.sql.array(ids)}::text[]) as id
    on conflict (node_id) do update set last_seen_at = greatest(alert_engine_nodes.last_seen_at, excluded.last_seen_at)
    where alert_engine_nodes.left_at is null`;
}

function round(v: number | null | undefined): number | null {
  return v === null || v === undefined ? null : Math.round(v * 100) / 100;
}
