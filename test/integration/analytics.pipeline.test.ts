/**
 * Issue 16, "Pipeline analytics": turns written by the engine's record writer (the same
 * `recorderFor` -> queue -> batch path the call actor uses) leave one pipeline event per provider
 * step; `GET /conversations/analytics/pipeline-events` and `.../pipeline-summary` aggregate them
 * per agent and date range in SQL. Known vectors (p95 = percentile_cont, computed by hand below),
 * range edges, another agent's events kept out, fencing (404), bad input naming the field, the
 * Connect route answering the same, and a deleted conversation taking its events along.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import type { TurnRecord } from '../../media-engine/session/recorder.js';
import { PipelineAnalyticsService } from '../../shared/gen/voiceplane/v1/analytics_pb.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent } from '../unit/records/control-plane.js';
import { endRecord } from '../unit/records/fixtures.js';

const A = '/api/v1/conversations/analytics';
const DAY1 = Date.parse('2026-03-10T09:00:00Z');
const DAY3 = Date.parse('2026-03-12T18:00:00Z');

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let bob: TestUser;
let writer: ConversationWriter;
let agent: string;
let otherAgent: string;
let conversationA: string;

beforeAll(async () => {
  infra = await startTestInfra();
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
  agent = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Pipeline agent');
  otherAgent = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Other agent');
});

afterAll(async () => {
  await writer?.close();
  await cp?.close();
  await infra?.close();
});

interface TurnSpec {
  asr: number;
  llmTtfb: number;
  tts: number;
  interrupted?: boolean;
  tool?: { status: 'success' | 'error'; ms: number };
  at: number;
}

/** A turn record shaped like the actor's (turn-accounting.ts), with chosen latencies. */
function turn(n: number, s: TurnSpec): TurnRecord {
  return {
    turn: n,
    user_text: `caller turn ${n}`,
    assistant_text: `agent turn ${n}`,
    interrupted: s.interrupted ?? false,
    timing: {
      asr_ms: s.asr,
      llm_ttfb_ms: s.llmTtfb,
      llm_total_ms: s.llmTtfb + 100,
      tool_ms: s.tool?.ms ?? 0,
      tts_ttfb_ms: s.tts,
      total_ms: s.asr + s.llmTtfb + s.tts + 20,
      internal_overhead_ms: 20,
      interrupted: s.interrupted ?? false,
      // A tool step would add its whole time to the LLM's share: keep the LLM vector exact by
      // reporting the tool turn as one step (the tool event is what is measured there).
      steps: [{ step: 1, llm_ttfb_ms: s.llmTtfb, llm_total_ms: s.llmTtfb + 100, tool_ms: s.tool?.ms ?? 0, tools: s.tool ? ['lookup_order'] : [] }],
    },
    asr: { provider: 'sim', model: 'sim-asr' },
    llm: { provider: 'openai', model: 'gpt-4o-mini', tokens_input: 10, tokens_output: 5 },
    tts: { provider: 'sim', model: 'sim-voice' },
    tool_calls: s.tool
      ? [{ id: `t${n}`, tool_call_id: `call_${n}`, tool_name: 'lookup_order', tool_input: {}, tool_output: s.tool.status === 'success' ? { ok: true } : undefined, status: s.tool.status, latency_ms: s.tool.ms, error_message: s.tool.status === 'error' ? 'upstream 502' : undefined }]
      : [],
    started_at_ms: s.at,
  };
}

/** One call through the record writer: start, the turns, end; resolves when written. */
async function call(agentId: string, turns: TurnSpec[]): Promise<string> {
  const sc = sessionConfig({ agent_id: agentId, workspace_id: alice.workspaceId });
  const rec = writer.recorderFor(sc);
  rec.start({ session_id: sc.session_id, agent_id: agentId, workspace_id: alice.workspaceId, metadata: {}, started_at_ms: turns[0].at - 1000 });
  turns.forEach((t, i) => rec.turn(turn(i + 1, t)));
  rec.end(endRecord(turns.length, turns[0].at - 1000));
  await writer.flush();
  return rec.conversationId;
}

function expectInvalid(res: { status: number; body: any }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('INVALID_REQUEST');
  expect(res.body.error.details[0].field).toBe(field);
}

const get = (route: string, query: string, token = alice.token) => api(cp, 'GET', `${A}/${route}?${query}`, { token });

describe('pipeline events from recorded turns', () => {
  it('the record writer stores one event per provider step of every turn', async () => {
    const h = 3_600_000;
    conversationA = await call(agent, [
      { at: DAY1, asr: 100, llmTtfb: 50, tts: 10 },
      { at: DAY1 + h, asr: 200, llmTtfb: 60, tts: 20 },
      { at: DAY1 + 2 * h, asr: 300, llmTtfb: 70, tts: 30, tool: { status: 'success', ms: 90 } },
      { at: DAY1 + 3 * h, asr: 400, llmTtfb: 80, tts: 40, tool: { status: 'error', ms: 250 } },
      { at: DAY1 + 4 * h, asr: 1000, llmTtfb: 90, tts: 50, interrupted: true },
    ]);
    // Two days later: inside a 3-day range, outside a 1-day one.
    await call(agent, [{ at: DAY3, asr: 5000, llmTtfb: 500, tts: 700 }]);
    // Another agent of the same workspace, same day: never counted for `agent`.
    await call(otherAgent, [{ at: DAY1, asr: 9999, llmTtfb: 9999, tts: 9999 }]);

    const rows = await infra.sql<{ event_type: string; n: number }[]>`
      select event_type, count(*)::int as n from pipeline_events where conversation_id = ${conversationA} group by 1 order by 1`;
    expect(rows).toEqual([
      { event_type: 'asr', n: 5 },
      { event_type: 'llm', n: 5 },
      { event_type: 'tool', n: 2 },
      { event_type: 'tts', n: 5 },
    ]);
    const [one] = await infra.sql`select * from pipeline_events where conversation_id = ${conversationA} and event_type = 'tool' and status = 'error'`;
    expect(one).toMatchObject({ agent_id: agent, workspace_id: alice.workspaceId, turn_number: 4, provider: 'lookup_order', model_id: '', latency_ms: 250, error_message: 'upstream 502' });
  });

  it('pipeline-events: total, avg and p95 (percentile_cont) per type/status/provider/model, for one agent and day', async () => {
    const res = await get('pipeline-events', `agent_id=${agent}&from=2026-03-10&to=2026-03-10`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe(true);
    // By hand: percentile_cont(0.95) over n sorted values is x[k] + f * (x[k+1] - x[k]), k + f = 0.95 (n - 1).
    // asr [100,200,300,400,1000]: 3.8 -> 400 + 0.8 * 600 = 880; avg 400.
    // llm success [50,60,70,80]: 2.85 -> 70 + 0.85 * 10 = 78.5; avg 65. tts success [10,20,30,40]: 38.5; avg 25.
    expect(res.body.data).toEqual([
      { event_type: 'asr', status: 'success', provider: 'sim', model_id: 'sim-asr', total: 5, avg_latency_ms: 400, p95_latency_ms: 880 },
      { event_type: 'llm', status: 'interrupted', provider: 'openai', model_id: 'gpt-4o-mini', total: 1, avg_latency_ms: 90, p95_latency_ms: 90 },
      { event_type: 'llm', status: 'success', provider: 'openai', model_id: 'gpt-4o-mini', total: 4, avg_latency_ms: 65, p95_latency_ms: 78.5 },
      { event_type: 'tool', status: 'error', provider: 'lookup_order', model_id: '', total: 1, avg_latency_ms: 250, p95_latency_ms: 250 },
      { event_type: 'tool', status: 'success', provider: 'lookup_order', model_id: '', total: 1, avg_latency_ms: 90, p95_latency_ms: 90 },
      { event_type: 'tts', status: 'interrupted', provider: 'sim', model_id: 'sim-voice', total: 1, avg_latency_ms: 50, p95_latency_ms: 50 },
      { event_type: 'tts', status: 'success', provider: 'sim', model_id: 'sim-voice', total: 4, avg_latency_ms: 25, p95_latency_ms: 38.5 },
    ]);
  });

  it('the range is inclusive of to: three days add the later call (asr p95 over 6 values)', async () => {
    const res = await get('pipeline-events', `agent_id=${agent}&from=2026-03-10&to=2026-03-12`);
    const asr = res.body.data.find((r: any) => r.event_type === 'asr');
    // [100,200,300,400,1000,5000]: 0.95 * 5 = 4.75 -> 1000 + 0.75 * 4000 = 4000; avg 7000 / 6 = 1166.67.
    expect(asr).toEqual({ event_type: 'asr', status: 'success', provider: 'sim', model_id: 'sim-asr', total: 6, avg_latency_ms: 1166.67, p95_latency_ms: 4000 });
    const after = await get('pipeline-events', `agent_id=${agent}&from=2026-03-11&to=2026-03-11`);
    expect(after.body.data).toEqual([]);
  });

  it('pipeline-summary: totals per event type and status', async () => {
    const res = await get('pipeline-summary', `agent_id=${agent}&from=2026-03-10&to=2026-03-10`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.data).toEqual([
      { event_type: 'asr', status: 'success', total: 5 },
      { event_type: 'llm', status: 'interrupted', total: 1 },
      { event_type: 'llm', status: 'success', total: 4 },
      { event_type: 'tool', status: 'error', total: 1 },
      { event_type: 'tool', status: 'success', total: 1 },
      { event_type: 'tts', status: 'interrupted', total: 1 },
      { event_type: 'tts', status: 'success', total: 4 },
    ]);
    const other = await get('pipeline-summary', `agent_id=${otherAgent}&from=2026-03-10&to=2026-03-10`);
    expect(other.body.data).toEqual([
      { event_type: 'asr', status: 'success', total: 1 },
      { event_type: 'llm', status: 'success', total: 1 },
      { event_type: 'tts', status: 'success', total: 1 },
    ]);
  });

  it('Connect answers the same aggregates as REST', async () => {
    const client = createClient(PipelineAnalyticsService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    const res = await client.getPipelineSummary({ agentId: agent, from: '2026-03-10', to: '2026-03-10' }, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(res.rows.map((r) => [r.eventType, r.status, r.total])).toEqual([
      ['asr', 'success', 5],
      ['llm', 'interrupted', 1],
      ['llm', 'success', 4],
      ['tool', 'error', 1],
      ['tool', 'success', 1],
      ['tts', 'interrupted', 1],
      ['tts', 'success', 4],
    ]);
  });
});

describe('fencing and input', () => {
  it("another workspace's agent and an unknown agent are 404", async () => {
    for (const route of ['pipeline-events', 'pipeline-summary']) {
      const res = await get(route, `agent_id=${agent}&from=2026-03-10&to=2026-03-10`, bob.token);
      expect(res.status, JSON.stringify(res.body)).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
      expect((await get(route, `agent_id=0193a4c2-7b7e-7cc1-8f00-00000000dead`)).status).toBe(404);
    }
    expect((await api(cp, 'GET', `${A}/pipeline-events?agent_id=${agent}`)).status).toBe(401);
  });

  it("another workspace's agent answers exactly as an unknown one (status, code, message)", async () => {
    for (const route of ['pipeline-events', 'pipeline-summary']) {
      const foreign = await get(route, `agent_id=${agent}&from=2026-03-10&to=2026-03-10`, bob.token);
      const unknown = await get(route, `agent_id=0193a4c2-7b7e-7cc1-8f00-00000000dead&from=2026-03-10&to=2026-03-10`, bob.token);
      expect({ status: foreign.status, error: foreign.body.error }, route).toEqual({ status: unknown.status, error: unknown.body.error });
      expect(foreign.body.error).toMatchObject({ code: 'NOT_FOUND', message: 'agent not found' });
    }
  });

  it('API keys need analysis:read (conversations:read alone is refused)', async () => {
    const mint = async (scopes: string[]) => {
      const res = await api(cp, 'POST', '/api/v1/auth/api-keys', { token: alice.token, body: { name: `k-${scopes.join('-')}`, scopes } });
      expect(res.status, JSON.stringify(res.body)).toBe(201);
      return res.body.data.key as string;
    };
    const q = `agent_id=${agent}&from=2026-03-10&to=2026-03-10`;
    expect((await get('pipeline-summary', q, await mint(['analysis:read']))).status).toBe(200);
    const refused = await get('pipeline-events', q, await mint(['conversations:read']));
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe('FORBIDDEN');
  });

  it('bad input is 400 naming the field', async () => {
    for (const route of ['pipeline-events', 'pipeline-summary']) {
      expectInvalid(await get(route, 'from=2026-03-10'), 'agent_id');
      expectInvalid(await get(route, `agent_id=not-a-uuid`), 'agent_id');
      expectInvalid(await get(route, `agent_id=${agent}&from=2026-02-30&to=2026-03-10`), 'from');
      expectInvalid(await get(route, `agent_id=${agent}&from=2026-03-10&to=03/12/2026`), 'to');
      expectInvalid(await get(route, `agent_id=${agent}&from=2026-03-12&to=2026-03-10`), 'from');
      expectInvalid(await get(route, `agent_id=${agent}&from=2026-01-01&to=2026-04-30`), 'to');
    }
    // Checked before the agent is looked up: bob gets the 400 too, not a 404.
    expectInvalid(await get('pipeline-events', `agent_id=${agent}&from=2026-03-12&to=2026-03-10`, bob.token), 'from');
  });
});

describe('retention', () => {
  it("a deleted conversation's events go with it (foreign key, on delete cascade)", async () => {
    const before = await infra.sql<{ n: number }[]>`select count(*)::int as n from pipeline_events where conversation_id = ${conversationA}`;
    expect(before[0].n).toBe(17);
    await infra.sql`delete from conversations where id = ${conversationA}`;
    const after = await infra.sql<{ n: number }[]>`select count(*)::int as n from pipeline_events where conversation_id = ${conversationA}`;
    expect(after[0].n).toBe(0);
    const res = await get('pipeline-summary', `agent_id=${agent}&from=2026-03-10&to=2026-03-10`);
    expect(res.body.data).toEqual([]);
  });
});
