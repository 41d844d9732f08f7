/** Rows -> proto messages (JSON as the spec writes it: snake_case, RFC 3339 times). */
import type { MessageInitShape } from '@bufbuild/protobuf';
import type { JsonObject } from '@bufbuild/protobuf';
import type { TestCaseSchema, TestResultSchema, TestRunSchema } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import { iso } from '../http/validate.js';
import type { CaseRow, ResultRow, RunRow } from './store.js';

export function caseView(c: CaseRow): MessageInitShape<typeof TestCaseSchema> {
  return {
    id: c.id,
    agentId: c.agent_id,
    name: c.name,
    persona: c.persona,
    goal: c.goal,
    assertions: c.assertions,
    maxTurns: c.max_turns,
    tags: c.tags,
    mocks: c.mocks as JsonObject,
    createdAt: iso(c.created_at),
    updatedAt: iso(c.updated_at),
  };
}

export function runView(r: RunRow): MessageInitShape<typeof TestRunSchema> {
  return {
    id: r.id,
    agentId: r.agent_id,
    agentVersion: r.agent_version,
    status: r.status,
    mode: r.mode,
    total: r.total,
    passed: r.passed,
    failed: r.failed,
    errored: r.errored,
    triggeredBy: r.triggered_by,
    startedAt: r.started_at ? iso(r.started_at) : undefined,
    lastHeartbeat: r.last_heartbeat ? iso(r.last_heartbeat) : undefined,
    finishedAt: r.finished_at ? iso(r.finished_at) : undefined,
    errorMessage: r.error_message ?? undefined,
    createdAt: iso(r.created_at),
  };
}

export function resultView(r: ResultRow): MessageInitShape<typeof TestResultSchema> {
  return {
    id: r.id,
    testRunId: r.test_run_id,
    testCaseId: r.test_case_id ?? '',
    testCaseName: r.test_case_name,
    status: r.status,
    transcript: r.transcript,
    assertionResults: r.assertion_results,
    turnsTaken: r.turns_taken,
    durationMs: r.duration_ms,
    tokensUsed: r.tokens_used,
    retryCount: r.retry_count,
    errorMessage: r.error_message ?? undefined,
    createdAt: iso(r.created_at),
  };
}
