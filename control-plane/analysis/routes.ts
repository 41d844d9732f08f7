/**
 * REST routes of the analysis domain (spec doc 3, "Analysis and conversation analytics"; envelope
 * family). They live under `/api/v1/conversations/analysis`: every path has more static segments
 * than the conversations routes' `/:id/...` patterns, so they are matched first.
 */
import { AnalysisService } from '../../shared/gen/voiceplane/v1/analysis_pb.js';
import type { RestRoute } from '../http/rest.js';

const A = '/api/v1/conversations/analysis';
const S = AnalysisService;

export const analysisRoutes: RestRoute[] = [
  { method: 'POST', path: `${A}/schemas`, service: S, rpc: 'createAnalysisSchema', status: 201 },
  { method: 'GET', path: `${A}/schemas`, service: S, rpc: 'listAnalysisSchemas', response: (json) => ({ data: json.schemas }) },
  { method: 'PUT', path: `${A}/schemas/:schema_id`, service: S, rpc: 'updateAnalysisSchema' },
  { method: 'DELETE', path: `${A}/schemas/:schema_id`, service: S, rpc: 'deleteAnalysisSchema' },
  { method: 'GET', path: `${A}/results`, service: S, rpc: 'listAnalysisResults', response: (json) => ({ data: json.results, meta: json.meta }) },
  { method: 'GET', path: `${A}/insights`, service: S, rpc: 'getAnalysisInsights' },
];
