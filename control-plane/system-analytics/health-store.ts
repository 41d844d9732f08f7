/**
 * `system_health` (migration 0010): one row per heartbeat report. Inserts are idempotent on
 * `(service_name, node_id, recorded_at)`; the read takes each process's newest row among the
 * recent ones; the prune deletes by age in bounded batches.
 */
import type { Sql } from '../../shared/db/client.js';
import type { HealthReport } from '../../shared/process-health.js';

export type ServiceName = 'control-plane' | 'media-engine';

export interface HealthRow {
  service_name: ServiceName;
  node_id: string;
  status: string;
  cpu_usage: number;
  memory_rss_bytes: number;
  heap_used_bytes: number;
  active_connections: number;
  active_calls: number;
  request_count: number;
  error_count: number;
  avg_response_ms: number | null;
  uptime_seconds: number;
  recorded_at: Date;
}

export interface ReportOf {
  service: ServiceName;
  nodeId: string;
  report: HealthReport;
  recordedAt: Date;
}

/** Stores reports; a report already stored (same process, same instant) is skipped. */
export async function insertReports(sql: Sql, reports: ReportOf[]): Promise<void> {
  if (!reports.length) return;
  const rows = reports.map(({ service, nodeId, report: r, recordedAt }) => ({
    service_name: service,
    node_id: nodeId,
    status: r.status,
    cpu_usage: r.cpuUsage,
    memory_rss_bytes: Math.round(r.memoryRssBytes),
    heap_used_bytes: Math.round(r.heapUsedBytes),
    active_connections: r.activeConnections,
    active_calls: r.activeCalls,
    request_count: r.requestCount,
    error_count: r.errorCount,
    avg_response_ms: r.avgResponseMs,
    uptime_seconds: r.uptimeSeconds,
    recorded_at: recordedAt,
  }));
  await sql`insert into system_health ${sql(rows)} on conflict (service_name, node_id, recorded_at) do nothing`;
}

/**
 * The newest row of every process that reported since `since` (a bounded slice of the
 * `recorded_at` index; a process silent for longer is gone from the answer).
 */
export function latestPerProcess(sql: Sql, since: Date): Promise<HealthRow[]> {
  return sql<HealthRow[]>`
    select distinct on (service_name, node_id)
      service_name, node_id, status, cpu_usage, memory_rss_bytes::float8 as memory_rss_bytes, heap_used_bytes::float8 as heap_used_bytes,
      active_connections, active_calls, request_count::float8 as request_count, error_count::float8 as error_count,
      avg_response_ms, uptime_seconds, recorded_at
    from system_health
    where recorded_at >= ${since}
    order by service_name, node_id, recorded_at desc`;
}

/** Deletes rows older than `before`, at most `batch` of them; returns how many went. */
export async function pruneBefore(sql: Sql, before: Date, batch: number): Promise<number> {
  const res = await sql`
    delete from system_health where id in (
      select id from system_health where recorded_at < ${before} order by recorded_at limit ${batch})`;
  return res.count;
}
