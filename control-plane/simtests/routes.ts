/**
 * REST routes of simulation tests (spec doc 1, "Simulation tests"; envelope family). The progress
 * stream (`GET /agents/test-runs/{runId}/stream`) is a raw handler (stream.ts). Additions:
 * `POST /agents/test-runs/{runId}/cancel` and `GET/PUT /agents/{id}/publish-gate`.
 */
import { SimTestService } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import type { RestRoute } from '../http/rest.js';

const AG = '/api/v1/agents';
const S = SimTestService;

export const simTestRoutes: RestRoute[] = [
  { method: 'GET', path: `${AG}/:agent_id/test-cases`, service: S, rpc: 'listTestCases', response: (j) => ({ data: j.test_cases }) },
  { method: 'POST', path: `${AG}/:agent_id/test-cases`, service: S, rpc: 'createTestCase', status: 201 },
  { method: 'PUT', path: `${AG}/:agent_id/test-cases/:test_case_id`, service: S, rpc: 'updateTestCase' },
  { method: 'DELETE', path: `${AG}/:agent_id/test-cases/:test_case_id`, service: S, rpc: 'deleteTestCase' },
  { method: 'POST', path: `${AG}/:agent_id/test-runs`, service: S, rpc: 'createTestRun', status: 201 },
  { method: 'GET', path: `${AG}/:agent_id/test-runs`, service: S, rpc: 'listTestRuns', response: (j) => ({ data: j.test_runs, meta: j.meta }) },
  { method: 'GET', path: `${AG}/test-runs/:run_id`, service: S, rpc: 'getTestRun' },
  { method: 'GET', path: `${AG}/test-runs/:run_id/results`, service: S, rpc: 'listTestResults', response: (j) => ({ data: j.results }) },
  { method: 'POST', path: `${AG}/test-runs/:run_id/cancel`, service: S, rpc: 'cancelTestRun', bodyType: 'none' },
  { method: 'GET', path: `${AG}/:agent_id/publish-gate`, service: S, rpc: 'getPublishGate' },
  { method: 'PUT', path: `${AG}/:agent_id/publish-gate`, service: S, rpc: 'putPublishGate' },
];
