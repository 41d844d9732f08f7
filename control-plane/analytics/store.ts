/**
 * The two aggregates, in SQL. Both read only `pipeline_events_agent_time_idx` (agent, time,
 * including every grouped column and the latency): an index-only range scan of one agent's slice,
 * then a sort-based group (percentile_cont needs the group's latencies sorted anyway). Plan and
 * timings on 1,000,000 rows: docs/analytics.md.
 */
import type { Sql } from '../../shared/db/client.js';
export { agentWorkspace } from '../db/owners.js';

export interface EventStatRow {
  event_type: string;
  status: string;
  provider: string;
  model_id: string;
  total: number;
  avg_latency_ms: number;
  p95_latency_ms: number;
}

export interface SummaryRow {
  event_type: string;
  status: string;
  total: number;
}

/**
 * Session settings for the two aggregates, local to their transaction:
 * - `work_mem`: a busy agent's 92 days (250,000 events) need ~25 MB to sort in memory; with the
 *   4 MB default the grouped sort spills to disk (~30% slower). Bounded by the 92-day range.
 * - `jit = off`: the estimated cost of a large slice crosses `jit_above_cost`, and compiling the
 *   expressions then costs ~150 ms, more than the query itself (seen while checking the plan).
 */
async function inAnalyticsTx<T>(sql: Sql, run: (tx: Sql) => Promise<T>): Promise<T> {
  return (await sql.begin(async (tx) => {
    await tx.unsafe(`set local work_mem = '64MB'`);
    await tx.unsafe(`set local jit = off`);
    return run(tx as unknown as Sql);
  })) as T;
}

export function eventStats(sql: Sql, agentId: string, start: Date, end: Date): Promise<EventStatRow[]> {
  return inAnalyticsTx(sql, (tx) => tx<EventStatRow[]>`
    select event_type, status, provider, model_id, count(*)::int as total,
      round(avg(latency_ms)::numeric, 2)::float8 as avg_latency_ms,
      round((percentile_cont(0.95) within group (order by latency_ms))::numeric, 2)::float8 as p95_latency_ms
    from pipeline_events
    where agent_id = ${agentId} and created_at >= ${start} and created_at < ${end}
    group by event_type, status, provider, model_id
    order by event_type, status, provider, model_id`);
}

export function summary(sql: Sql, agentId: string, start: Date, end: Date): Promise<SummaryRow[]> {
  return inAnalyticsTx(sql, (tx) => tx<SummaryRow[]>`
    select event_type, status, count(*)::int as total
    from pipeline_events
    where agent_id = ${agentId} and created_at >= ${start} and created_at < ${end}
    group by event_type, status
    order by event_type, status`);
}

