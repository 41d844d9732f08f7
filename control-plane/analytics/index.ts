/**
 * The analytics domain (issue 16, "Pipeline analytics"; spec doc 3 "Pipeline event stat",
 * "Pipeline summary row"): read-only aggregates over `pipeline_events`, which the engine's record
 * writer fills (media-engine/records/pipeline-events.ts). Public contract: docs/analytics.md.
 */
import { PipelineAnalyticsService } from '../../shared/gen/voiceplane/v1/analytics_pb.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import { analyticsRoutes } from './routes.js';
import { createPipelineAnalyticsService } from './service.js';

export type AnalyticsDeps = Pick<ControlPlaneDeps, 'clock' | 'sql'> & { auth: Auth };

export function createAnalyticsDomain(deps: AnalyticsDeps): Domain {
  return {
    services: [{ service: PipelineAnalyticsService, impl: createPipelineAnalyticsService(deps) }] as ServiceBinding[],
    routes: analyticsRoutes,
  };
}
