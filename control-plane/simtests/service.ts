/**
 * SimTestService: the spec's "Simulation tests" routes (doc 1), one implementation for REST,
 * Connect and gRPC, plus the additions `cancel` and `publish-gate`.
 *
 * Fencing and roles: by the agent's workspace (control-plane/agents/access.ts): another
 * workspace's agent or run is 404 like a missing one; any member reads, edits cases and starts or
 * cancels runs (like editing the draft: a run changes nothing live); setting `publish_gate` needs
 * `manager` (it governs publishing, which needs manager).
 */
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema, type Value } from '@bufbuild/protobuf/wkt';
import type { SimTestService } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import { conflict, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { Access, AgentOp } from '../agents/access.js';
import type { AgentRow } from '../agents/types.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { MAX_NAME_CHARS, oneOf, optionalNonEmpty, optionalText, pathId, required } from '../http/validate.js';
import type { RunCreator } from './runs.js';
import * as store from './store.js';
import * as v from './validate.js';
import { caseView, resultView, runView } from './views.js';

export const PUBLISH_GATES = ['none', 'warn', 'block'] as const;

export interface SimTestServiceDeps {
  sql: Sql;
  access: Access;
  runs: RunCreator;
  /** Told when a request changed a run (cancel), for this process's progress streams. */
  onChange?: (runId: string) => void;
}

function json(value: Value | undefined): unknown {
  return value === undefined ? undefined : toJson(ValueSchema, value);
}

export function createSimTestService(deps: SimTestServiceDeps): ServiceImpl<typeof SimTestService> {
  const { sql, access, runs } = deps;

  async function agentFor(ctx: HandlerContext, agentId: string, op: AgentOp): Promise<AgentRow> {
    return (await access.agent(ctx, agentId, op)).agent;
  }

  /** The run, after checking the caller may `op` its agent (404 for another workspace's run). */
  async function runFor(ctx: HandlerContext, runId: string, op: AgentOp): Promise<store.RunRow> {
    const run = await store.getRun(sql, pathId('test run', runId));
    if (!run) throw notFound('test run');
    try {
      await access.agent(ctx, run.agent_id, op);
    } catch (e) {
      if ((e as { code?: string }).code === 'NOT_FOUND') throw notFound('test run');
      throw e;
    }
    return run;
  }

  async function caseFor(agent: AgentRow, tcId: string): Promise<store.CaseRow> {
    const c = await store.getCase(sql, agent.id, pathId('test case', tcId));
    if (!c) throw notFound('test case');
    return c;
  }

  return {
    async listTestCases(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'read');
      return { testCases: (await store.listCases(sql, agent.id)).map(caseView) };
    },

    async createTestCase(req, ctx) {
      const name = required('name', req.name, MAX_NAME_CHARS);
      const persona = optionalText('persona', req.persona, v.MAX_PERSONA_CHARS) ?? '';
      const goal = required('goal', req.goal, v.MAX_GOAL_CHARS);
      if (req.assertions === undefined) throw invalid('assertions', 'is required');
      const assertions = v.parseAssertions(json(req.assertions));
      const maxTurns = v.parseMaxTurns(req.maxTurns) ?? v.DEFAULT_CASE_TURNS;
      const tags = req.tags === undefined ? [] : v.parseTags(json(req.tags));
      const mocks = req.mocks === undefined ? {} : v.parseMocks(json(req.mocks));
      const agent = await agentFor(ctx, req.agentId, 'edit');
      if ((await store.countCases(sql, agent.id)) >= v.MAX_CASES_PER_AGENT) throw conflict(`the agent already has ${v.MAX_CASES_PER_AGENT} test cases`, 'LIMIT_REACHED');
      const row = await store.insertCase(sql, { id: newId(), agent_id: agent.id, workspace_id: agent.workspace_id, name, persona, goal, assertions, max_turns: maxTurns, tags, mocks });
      return caseView(row);
    },

    async updateTestCase(req, ctx) {
      const name = optionalNonEmpty('name', req.name, MAX_NAME_CHARS);
      const persona = optionalText('persona', req.persona, v.MAX_PERSONA_CHARS);
      const goal = optionalNonEmpty('goal', req.goal, v.MAX_GOAL_CHARS);
      const assertions = req.assertions === undefined ? undefined : v.parseAssertions(json(req.assertions));
      const maxTurns = v.parseMaxTurns(req.maxTurns);
      const tags = req.tags === undefined ? undefined : v.parseTags(json(req.tags));
      const mocks = req.mocks === undefined ? undefined : v.parseMocks(json(req.mocks));
      const agent = await agentFor(ctx, req.agentId, 'edit');
      const cur = await caseFor(agent, req.testCaseId);
      const row = await store.updateCase(sql, {
        ...cur,
        name: name ?? cur.name,
        persona: persona ?? cur.persona,
        goal: goal ?? cur.goal,
        assertions: assertions ?? cur.assertions,
        max_turns: maxTurns ?? cur.max_turns,
        tags: tags ?? cur.tags,
        mocks: mocks ?? cur.mocks,
      });
      if (!row) throw notFound('test case');
      return caseView(row);
    },

    async deleteTestCase(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'edit');
      if (!(await store.deleteCase(sql, agent.id, pathId('test case', req.testCaseId)))) throw notFound('test case');
      return { status: 'deleted' };
    },

    async createTestRun(req, ctx) {
      if (req.agentVersion !== undefined && !(Number.isInteger(req.agentVersion) && req.agentVersion >= 0)) {
        throw invalid('agent_version', 'must be 0 (the draft) or a published version number');
      }
      const caseIds = req.caseIds === undefined ? undefined : v.parseCaseIds(json(req.caseIds), isUuid);
      const mode = req.mode === '' ? 'text' : oneOf('mode', req.mode, store.RUN_MODES)!;
      const agent = await agentFor(ctx, req.agentId, 'edit');
      const run = await runs.create(agent, { version: req.agentVersion, caseIds, triggeredBy: 'api', mode });
      return runView(run);
    },

    async listTestRuns(req, ctx) {
      const page = pageOf(req);
      const agent = await agentFor(ctx, req.agentId, 'read');
      const { rows, total } = await store.listRuns(sql, agent.id, page);
      return { testRuns: rows.map(runView), meta: pageMeta(page, total) };
    },

    async getTestRun(req, ctx) {
      return runView(await runFor(ctx, req.runId, 'read'));
    },

    async listTestResults(req, ctx) {
      const run = await runFor(ctx, req.runId, 'read');
      return { results: (await store.listResults(sql, run.id)).map(resultView) };
    },

    async cancelTestRun(req, ctx) {
      const run = await runFor(ctx, req.runId, 'edit');
      const cancelled = await store.cancelRun(sql, run.id);
      if (!cancelled) throw conflict(`the test run is already ${run.status}`);
      deps.onChange?.(run.id);
      return runView(cancelled);
    },

    async getPublishGate(req, ctx) {
      const agent = await agentFor(ctx, req.agentId, 'read');
      return { agentId: agent.id, publishGate: (await store.publishGateOf(sql, agent.id)) ?? 'none' };
    },

    async putPublishGate(req, ctx) {
      const gate = oneOf('publish_gate', req.publishGate, PUBLISH_GATES) ?? 'none';
      const agent = await agentFor(ctx, req.agentId, 'publish');
      await store.setPublishGate(sql, agent.id, gate);
      return { agentId: agent.id, publishGate: gate };
    },
  };
}
