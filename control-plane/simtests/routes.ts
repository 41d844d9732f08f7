/**
 * REST routes of simulation tests (spec doc 1, "Simulation tests"; envelope family). The progress
 * stream (`GET /agents/test-runs/{runId}/stream`) is a raw handler (stream.ts). Additions:
 * `POST /agents/test-runs/{runId}/cancel` and `GET/PUT /agents/{id}/publish-gate`.
 */
import { SimTestService } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import type { RestRoute } from '../http/rest.js';
import { withNulls } from '../http/envelope.js';

const AG = '/api/v1/agents';
const S = SimTestService;

type Json = Record<string, unknown>;
/** The spec lists these fields; proto JSON leaves an unset one out, REST writes it as null. */
export const RUN_NULLABLE = ['started_at', 'last_heartbeat', 'finished_at', 'error_message'];
export const RESULT_NULLABLE = ['error_message'];
const run = (j: Json) => ({ data: withNulls(j, RUN_NULLABLE) });

export const simTestRoutes: RestRoute[] = [
  { method: 'GET', path: `${AG}/:agent_id/test-cases`, service: S, rpc: 'listTestCases', response: (j) => ({ data: j.test_cases }) },
  { method: 'POST', path: `${AG}/:agent_id/test-cases`, service: S, rpc: 'createTestCase', status: 201 },
  { method: 'PUT', path: `${AG}/:agent_id/test-cases/:test_case_id`, service: S, rpc: 'updateTestCase' },
  { method: 'DELETE', path: `${AG}/:agent_id/test-cases/:test_case_id`, service: S, rpc: 'deleteTestCase' },
  { method: 'POST', path: `${AG}/:agent_id/test-runs`, service: S, rpc: 'createTestRun', status: 201, response: run },
  { method: 'GET', path: `${AG}/:agent_id/test-runs`, service: S, rpc: 'listTestRuns', response: (j) => ({ data: ((j.test_runs ?? []) as Json[]).map((r) => withNulls(r, RUN_NULLABLE)), meta: j.meta }) },
  { method: 'GET', path: `${AG}/test-runs/:run_id`, service: S, rpc: 'getTestRun', response: run },
  { method: 'GET', path: `${AG}/test-runs/:run_id/results`, service: S, rpc: 'listTestResults', response: (j) => ({ data: ((j.results ?? []) as Json[]).map((r) => withNulls(r, RESULT_NULLABLE)) }) },
  { method: 'POST', path: `${AG}/test-runs/:run_id/cancel`, service: S, rpc: 'cancelTestRun', bodyType: 'none', response: run },
  { method: 'GET', path: `${AG}/:agent_id/publish-gate`, service: S, rpc: 'getPublishGate' },
  { method: 'PUT', path: `${AG}/:agent_id/publish-gate`, service: S, rpc: 'putPublishGate' },
];
