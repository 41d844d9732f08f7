/**
 * The system analytics domain (issue 17, "System analytics"; spec doc 3 "System analytics and
 * alerts"): latency, usage and tool-call aggregates over the conversation records, and the
 * system health of every control-plane process and engine node. Public contract:
 * docs/system-analytics.md.
 */
import { SystemAnalyticsService } from '../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import { RequestMeter } from '../../shared/process-health.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import { startHealthReporter, type HealthReporter } from './reporter.js';
import { systemAnalyticsRoutes } from './routes.js';
import { createSystemAnalyticsService } from './service.js';

export type SystemAnalyticsDeps = Pick<ControlPlaneDeps, 'clock' | 'sql' | 'registry' | 'logger' | 'config'> & { auth: Auth; jobs: Jobs };

export interface SystemAnalyticsDomain extends Domain {
  /** Counts every answered request of this process (the HTTP server's `onResponse`). */
  meter: RequestMeter;
  /** The running reporter (after `startReporting`). */
  readonly reporter: HealthReporter | undefined;
  /** Starts this process's health reports and the collector worker, once the server listens. */
  startReporting(o: { connections: () => number; nodeId?: string }): Promise<HealthReporter>;
}

export function createSystemAnalyticsDomain(deps: SystemAnalyticsDeps): SystemAnalyticsDomain {
  const meter = new RequestMeter();
  const intervalMs = deps.config.healthReportIntervalMs;
  let reporter: HealthReporter | undefined;
  return {
    services: [{ service: SystemAnalyticsService, impl: createSystemAnalyticsService({ ...deps, healthIntervalMs: intervalMs }) }] as ServiceBinding[],
    routes: systemAnalyticsRoutes,
    meter,
    get reporter() {
      return reporter;
    },
    async startReporting(o) {
      reporter = await startHealthReporter({
        ...deps,
        nodeId: o.nodeId,
        intervalMs,
        retentionMs: deps.config.healthRetentionHours * 3_600_000,
        counters: () => ({ activeConnections: o.connections(), activeCalls: 0, requestCount: meter.requests, errorCount: meter.errors, avgResponseMs: meter.takeAvgMs() }),
      });
      return reporter;
    },
    async close() {
      await reporter?.close();
    },
  };
}
