/**
 * REST routes of the QA domain (spec doc 3, "QA"; envelope family) under `/api/v1/qa`.
 * `GET /qa/agent/{agentId}/rubric` answers `data: null` when the agent has no active rubric.
 */
import { QaService } from '../../shared/gen/voiceplane/v1/qa_pb.js';
import type { RestRoute } from '../http/rest.js';

const Q = '/api/v1/qa';
const S = QaService;

export const qaRoutes: RestRoute[] = [
  { method: 'POST', path: `${Q}/rubrics`, service: S, rpc: 'createQaRubric', status: 201 },
  { method: 'GET', path: `${Q}/rubrics`, service: S, rpc: 'listQaRubrics', response: (json) => ({ data: json.rubrics }) },
  { method: 'PUT', path: `${Q}/rubrics/:rubric_id`, service: S, rpc: 'updateQaRubric' },
  { method: 'DELETE', path: `${Q}/rubrics/:rubric_id`, service: S, rpc: 'deleteQaRubric' },
  { method: 'POST', path: `${Q}/rubrics/:rubric_id/bind/:agent_id`, service: S, rpc: 'bindQaRubric' },
  { method: 'DELETE', path: `${Q}/rubrics/:rubric_id/bind/:agent_id`, service: S, rpc: 'unbindQaRubric' },
  { method: 'GET', path: `${Q}/agent/:agent_id/rubric`, service: S, rpc: 'getAgentQaRubric', response: (json) => ({ data: json.rubric ?? null }) },
  { method: 'GET', path: `${Q}/scores`, service: S, rpc: 'listQaScores', response: (json) => ({ data: json.scores, meta: json.meta }) },
  { method: 'POST', path: `${Q}/scores/:score_id/review`, service: S, rpc: 'reviewQaScore' },
];
