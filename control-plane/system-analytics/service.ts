/**
 * SystemAnalyticsService: `GET /analytics/latency`, `/usage`, `/tool-calls` and `/system-health`
 * (spec doc 3, "System analytics and alerts"), one implementation for REST, Connect and gRPC.
 *
 * Fencing (the pipeline analytics convention, control-plane/analytics): the query is checked
 * first (400 naming the field), then narrowed to the caller's workspaces; a named agent,
 * workspace or session the caller cannot see is 404 like a missing one. Without a filter the
 * answer covers every workspace the caller is a member of. System health describes the
 * deployment, not a tenant: the organization owner only (others 403).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { SystemAnalyticsService } from '../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Sql } from '../../shared/db/client.js';
import { forbidden, notFound } from '../../shared/errors.js';
import type { Auth } from '../http/auth.js';
import { latestPerProcess } from './health-store.js';
import { parseQuery, type RawQuery, type RecordRoute } from './params.js';
import * as store from './store.js';

/** The health read covers this much history: a process silent for longer is gone from it. */
export const HEALTH_LOOKBACK_MS = 60 * 60 * 1000;
/** A process whose newest report is older than this many report intervals is `stale`... */
export const STALE_AFTER_INTERVALS = 3;
/** ...but never sooner than this: engine rows arrive through the job queue, whose polling adds seconds. */
export const MIN_STALE_MS = 10_000;

export interface SystemAnalyticsServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  /** The report period (HEALTH_REPORT_INTERVAL_MS): what "stale" is measured in. */
  healthIntervalMs: number;
}

export function createSystemAnalyticsService(deps: SystemAnalyticsServiceDeps): ServiceImpl<typeof SystemAnalyticsService> {
  const { sql, auth, clock } = deps;

  /** The checked query as a scope, or undefined when the caller has no workspace at all. */
  async function scope(route: RecordRoute, req: RawQuery, ctx: HandlerContext): Promise<store.Scope | undefined> {
    const p = await auth.principal(ctx);
    const q = parseQuery(route, req, clock.now());
    let ws = await auth.workspaceIds(p);
    if (q.workspaceId) {
      if (!ws.includes(q.workspaceId)) throw notFound('workspace');
      ws = [q.workspaceId];
    }
    if (q.agentId) {
      const agentWs = await store.agentWorkspace(sql, q.agentId);
      if (!agentWs || !ws.includes(agentWs)) throw notFound('agent');
      ws = [agentWs];
    }
    if (!ws.length) return undefined;
    const s: store.Scope = { ws, agentId: q.agentId, userId: q.userId, sessionId: q.sessionId, start: q.start, end: q.end };
    if (q.sessionId && !(await store.sessionVisible(sql, { ...s, sessionId: q.sessionId }))) throw notFound('session');
    return s;
  }

  return {
    async getLatencyMetrics(req, ctx) {
      const s = await scope('latency', req, ctx);
      const rows = s ? await store.latency(sql, s) : [];
      return {
        metrics: rows.map((r) => ({ metricType: r.metric_type, component: r.component, provider: r.provider, model: r.model, avgLatencyMs: r.avg_latency_ms, count: r.count })),
      };
    },

    async getUsage(req, ctx) {
      const s = await scope('usage', req, ctx);
      const rows = s ? await store.usage(sql, s) : [];
      return {
        records: rows.map((r) => ({
          userId: r.user_id,
          totalSessions: r.total_sessions,
          totalConversations: r.total_conversations,
          totalMessages: r.total_messages,
          totalDurationMs: r.total_duration_ms,
          avgLatencyMs: r.avg_latency_ms,
          p95LatencyMs: r.p95_latency_ms,
          p99LatencyMs: r.p99_latency_ms,
        })),
        totalUsers: rows[0]?.total_users ?? 0,
      };
    },

    async getToolMetrics(req, ctx) {
      const s = await scope('tool-calls', req, ctx);
      const rows = s ? await store.toolCalls(sql, s) : [];
      return {
        metrics: rows.map((r) => ({
          toolName: r.tool_name,
          callCount: r.call_count,
          successCount: r.success_count,
          errorCount: r.error_count,
          successRate: r.success_rate,
          avgLatencyMs: r.avg_latency_ms,
          minLatencyMs: r.min_latency_ms,
          maxLatencyMs: r.max_latency_ms,
          p50LatencyMs: r.p50_latency_ms,
          p95LatencyMs: r.p95_latency_ms,
        })),
      };
    },

    async getSystemHealth(_req, ctx) {
      const p = await auth.principal(ctx);
      if (!p.isOrgOwner) throw forbidden('system health is readable by the organization owner only');
      const now = clock.now();
      const staleBefore = now - Math.max(STALE_AFTER_INTERVALS * deps.healthIntervalMs, MIN_STALE_MS);
      const rows = await latestPerProcess(sql, new Date(now - HEALTH_LOOKBACK_MS));
      const record = (r: (typeof rows)[number]) => ({
        serviceName: r.service_name,
        nodeId: r.node_id,
        status: r.status === 'healthy' && r.recorded_at.getTime() < staleBefore ? 'stale' : r.status,
        cpuUsage: r.cpu_usage,
        memoryUsage: r.memory_rss_bytes,
        heapUsedBytes: r.heap_used_bytes,
        activeConnections: r.active_connections,
        activeCalls: r.active_calls,
        requestCount: r.request_count,
        errorCount: r.error_count,
        avgResponseMs: r.avg_response_ms ?? undefined,
        uptimeSeconds: r.uptime_seconds,
        recordedAt: r.recorded_at.toISOString(),
      });
      // The spec's "latest health record per service": the newest report of a live process (a
      // process that stopped writes its last report as it goes, newer than a live one's periodic
      // report, and is not the service's state), else the newest of all; every process's own
      // newest report beside it, live ones first.
      const byService = new Map<string, ReturnType<typeof record>[]>();
      for (const r of rows) byService.set(r.service_name, [...(byService.get(r.service_name) ?? []), record(r)]);
      const live = (r: ReturnType<typeof record>) => (r.status === 'healthy' ? 0 : 1);
      return {
        records: [...byService.values()].map((procs) => {
          const ordered = [...procs].sort((a, b) => live(a) - live(b) || b.recordedAt.localeCompare(a.recordedAt) || a.nodeId.localeCompare(b.nodeId));
          return { ...ordered[0]!, processes: ordered };
        }),
      };
    },
  };
}
