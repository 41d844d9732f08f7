/**
 * REST routes of pipeline analytics (spec doc 3, "Analysis and conversation analytics"; envelope
 * family). Under `/api/v1/conversations/analytics`: more static segments than the conversations
 * routes' `/:id/...` patterns, so they are matched first. Both answer a bare array in `data`.
 */
import { PipelineAnalyticsService } from '../../shared/gen/voiceplane/v1/analytics_pb.js';
import type { RestRoute } from '../http/rest.js';

const A = '/api/v1/conversations/analytics';
const S = PipelineAnalyticsService;

export const analyticsRoutes: RestRoute[] = [
  { method: 'GET', path: `${A}/pipeline-events`, service: S, rpc: 'getPipelineEvents', response: (json) => ({ data: json.stats }) },
  { method: 'GET', path: `${A}/pipeline-summary`, service: S, rpc: 'getPipelineSummary', response: (json) => ({ data: json.rows }) },
];
