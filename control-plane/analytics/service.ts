/**
 * PipelineAnalyticsService: `GET /conversations/analytics/pipeline-events` and
 * `.../pipeline-summary` (spec doc 3), one implementation for REST, Connect and gRPC.
 *
 * Fencing: by the agent's workspace; an agent of another workspace (or none) is 404, like a
 * missing row. Any member reads. The query is checked before the agent is looked up, so bad
 * input is a 400 naming the field whoever the agent belongs to.
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { PipelineAnalyticsService } from '../../shared/gen/voiceplane/v1/analytics_pb.js';
import type { Clock } from '../../shared/clock.js';
import type { Sql } from '../../shared/db/client.js';
import { notFound } from '../../shared/errors.js';
import type { Auth } from '../http/auth.js';
import { parsePipelineQuery, type PipelineQuery } from './params.js';
import * as store from './store.js';

export interface AnalyticsServiceDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
}

export function createPipelineAnalyticsService(deps: AnalyticsServiceDeps): ServiceImpl<typeof PipelineAnalyticsService> {
  const { sql, auth, clock } = deps;

  async function checked(req: { agentId: string; from: string; to: string }, ctx: HandlerContext): Promise<PipelineQuery> {
    const p = await auth.principal(ctx);
    const q = parsePipelineQuery(req, clock.now());
    const ws = await store.agentWorkspace(sql, q.agentId);
    // Another tenant's agent answers as an unknown one: requireWorkspace's "workspace not found"
    // would tell that the agent exists elsewhere.
    if (!ws || !(await auth.roleIn(p, ws))) throw notFound('agent');
    return q;
  }

  return {
    async getPipelineEvents(req, ctx) {
      const q = await checked(req, ctx);
      const rows = await store.eventStats(sql, q.agentId, q.start, q.end);
      return {
        stats: rows.map((r) => ({
          eventType: r.event_type,
          status: r.status,
          provider: r.provider,
          modelId: r.model_id,
          total: r.total,
          avgLatencyMs: r.avg_latency_ms,
          p95LatencyMs: r.p95_latency_ms,
        })),
      };
    },

    async getPipelineSummary(req, ctx) {
      const q = await checked(req, ctx);
      const rows = await store.summary(sql, q.agentId, q.start, q.end);
      return { rows: rows.map((r) => ({ eventType: r.event_type, status: r.status, total: r.total })) };
    },
  };
}
