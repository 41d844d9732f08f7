/**
 * Issue 17, "System analytics": `GET /analytics/latency`, `/usage`, `/tool-calls` aggregate the
 * conversation records written through the engine's record writer (the path the call actor
 * uses), with vectors computed by hand below; fencing to the caller's workspaces (404 for
 * another tenant's agent, session or workspace); bad input and unknown parameters naming the
 * field; and `/system-health` showing this control plane (its own row) and an engine node (its
 * registry heartbeat, copied by the collector job on the durable queue).
 */
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import type { TurnRecord } from '../../media-engine/session/recorder.js';
import type { EngineNode } from '../../media-engine/node.js';
import { SystemAnalyticsService } from '../../shared/gen/voiceplane/v1/system_analytics_pb.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { createAgent } from '../unit/records/control-plane.js';
import { endRecord } from '../unit/records/fixtures.js';

const A = '/api/v1/analytics';
const ORG_KEY = 'org_key_system_analytics_test_0123';
const DAY1 = Date.parse('2026-03-10T09:00:00Z');
const RANGE = 'from=2026-03-10&to=2026-03-10';
const DURATION_MS = endRecord(1, 0).total_duration_ms;

let infra: TestInfra;
let cp: ControlPlane;
let engine: EngineNode;
let alice: TestUser;
let bob: TestUser;
let writer: ConversationWriter;
let agentX: string;
let agentY: string;
let bobAgent: string;
let sessionA: string;
let sessionB: string;
let bobSession: string;

interface TurnSpec {
  asr: number;
  llmTtfb: number;
  tts: number;
  total: number;
  overhead?: number;
  tool?: { name: string; status: 'success' | 'error'; ms: number };
}

/** A turn record shaped like the actor's; `llm_latency_ms` is written as llmTtfb + tool time. */
function turn(n: number, at: number, s: TurnSpec): TurnRecord {
  const toolMs = s.tool?.ms ?? 0;
  return {
    turn: n,
    user_text: `caller turn ${n}`,
    assistant_text: `agent turn ${n}`,
    interrupted: s.total === 0,
    timing: {
      asr_ms: s.asr,
      llm_ttfb_ms: s.llmTtfb,
      llm_total_ms: s.llmTtfb + 100,
      tool_ms: toolMs,
      tts_ttfb_ms: s.tts,
      total_ms: s.total,
      internal_overhead_ms: s.overhead ?? 20,
      interrupted: s.total === 0,
      steps: [{ step: 1, llm_ttfb_ms: s.llmTtfb, llm_total_ms: s.llmTtfb + 100, tool_ms: toolMs, tools: s.tool ? [s.tool.name] : [] }],
    },
    asr: { provider: 'sim', model: 'sim-asr' },
    llm: { provider: 'openai', model: 'gpt-4o-mini', tokens_input: 10, tokens_output: 5 },
    tts: { provider: 'sim', model: 'sim-voice' },
    tool_calls: s.tool
      ? [{ id: `t${n}`, tool_call_id: `call_${n}`, tool_name: s.tool.name, tool_input: {}, tool_output: s.tool.status === 'success' ? { ok: true } : undefined, status: s.tool.status, latency_ms: s.tool.ms, error_message: s.tool.status === 'error' ? 'upstream 502' : undefined }]
      : [],
    started_at_ms: at,
  };
}

/** One call through the record writer; resolves with its session id once written. */
async function call(user: TestUser, agentId: string, userId: string, at: number, turns: TurnSpec[]): Promise<string> {
  const sc = sessionConfig({ agent_id: agentId, workspace_id: user.workspaceId });
  const rec = writer.recorderFor(sc);
  rec.start({ session_id: sc.session_id, agent_id: agentId, user_id: userId, workspace_id: user.workspaceId, metadata: {}, started_at_ms: at - 1000 });
  turns.forEach((t, i) => rec.turn(turn(i + 1, at + i * 60_000, t)));
  rec.end(endRecord(turns.length, at - 1000));
  await writer.flush();
  return sc.session_id;
}

beforeAll(async () => {
  infra = await startTestInfra({ healthReportIntervalMs: 200 }, { ORG_API_KEY: ORG_KEY });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, nodeId: 'cp-under-test' });
  engine = await startSimEngine({ config: infra.config, logger: infra.logger, registry: infra.registry, nodeId: 'engine-under-test', heartbeatMs: 200 });
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
  agentX = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Agent X');
  agentY = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Agent Y');
  bobAgent = await createAgent(cp as never, infra, bob, bob.workspaceId, 'Bob agent');

  sessionA = await call(alice, agentX, 'u1', DAY1, [
    { asr: 100, llmTtfb: 50, tts: 10, total: 200 },
    { asr: 200, llmTtfb: 60, tts: 20, total: 400, tool: { name: 'lookup_order', status: 'success', ms: 90 } },
    { asr: 300, llmTtfb: 70, tts: 30, total: 700, tool: { name: 'lookup_order', status: 'error', ms: 250 } },
  ]);
  sessionB = await call(alice, agentX, 'u1', DAY1 + 3_600_000, [
    { asr: 400, llmTtfb: 80, tts: 40, total: 600, tool: { name: 'weather', status: 'success', ms: 30 } },
    // Barge-in before any audio: total 0, left out of the latency averages and percentiles.
    { asr: 500, llmTtfb: 90, tts: 0, total: 0, overhead: 0 },
  ]);
  await call(alice, agentY, 'u2', DAY1 + 7_200_000, [{ asr: 1000, llmTtfb: 100, tts: 100, total: 1500, tool: { name: 'lookup_order', status: 'success', ms: 10 } }]);
  // The day after: outside a one-day range.
  await call(alice, agentX, 'u1', DAY1 + 86_400_000, [{ asr: 9000, llmTtfb: 9000, tts: 9000, total: 9000 }]);
  // Another tenant, same day: never in alice's answers.
  bobSession = await call(bob, bobAgent, 'u1', DAY1, [{ asr: 7777, llmTtfb: 7777, tts: 7777, total: 7777, tool: { name: 'secret_tool', status: 'success', ms: 7777 } }]);
});

afterAll(async () => {
  await writer?.close();
  await engine?.close();
  await cp?.close();
  await infra?.close();
});

const get = (route: string, query: string, token = alice.token) => api(cp, 'GET', `${A}/${route}?${query}`, { token });

function expectInvalid(res: { status: number; body: any }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('INVALID_REQUEST');
  expect(res.body.error.details[0].field).toBe(field);
}

function expectNotFound(res: { status: number; body: any }): void {
  expect(res.status, JSON.stringify(res.body)).toBe(404);
  expect(res.body.error.code).toBe('NOT_FOUND');
}

describe('GET /analytics/latency', () => {
  it('averages and counts per component, provider and model for one agent and day', async () => {
    const res = await get('latency', `agent_id=${agentX}&${RANGE}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    expect(res.body.success).toBe(true);
    // asr 100..500 -> 300; llm = ttfb + tool: 50, 150, 320, 110, 90 -> 144; tts 10, 20, 30, 40, 0 -> 20;
    // total 200, 400, 700, 600 (the 0 left out) -> 475; overhead 20 x4 + 0 -> 16; tools 90, 250 / 30.
    expect(res.body.data).toEqual([
      { metric_type: 'asr_latency', component: 'asr', provider: 'sim', model: 'sim-asr', avg_latency_ms: 300, count: 5 },
      { metric_type: 'internal_overhead', component: 'turn', provider: '', model: '', avg_latency_ms: 16, count: 5 },
      { metric_type: 'llm_latency', component: 'llm', provider: 'openai', model: 'gpt-4o-mini', avg_latency_ms: 144, count: 5 },
      { metric_type: 'tool_latency', component: 'tool', provider: 'lookup_order', model: '', avg_latency_ms: 170, count: 2 },
      { metric_type: 'tool_latency', component: 'tool', provider: 'weather', model: '', avg_latency_ms: 30, count: 1 },
      { metric_type: 'total_latency', component: 'turn', provider: '', model: '', avg_latency_ms: 475, count: 4 },
      { metric_type: 'tts_latency', component: 'tts', provider: 'sim', model: '', avg_latency_ms: 20, count: 5 },
    ]);
  });

  it('one session, whatever the range', async () => {
    const res = await get('latency', `session_id=${encodeURIComponent(sessionB)}`);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const byType = Object.fromEntries(res.body.data.map((m: any) => [`${m.metric_type}/${m.provider}`, [m.avg_latency_ms, m.count]]));
    expect(byType).toEqual({
      'asr_latency/sim': [450, 2],
      'llm_latency/openai': [100, 2],
      'tts_latency/sim': [20, 2],
      'total_latency/': [600, 1],
      'internal_overhead/': [10, 2],
      'tool_latency/weather': [30, 1],
    });
  });
});

describe('GET /analytics/latency: which rows count', () => {
  it('typed-in turns (no ASR time) are not ASR samples; latency fields on a caller row are not reply latency', async () => {
    const agentZ = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Agent Z');
    // Ten days on: outside every ranged assertion of this file.
    const session = await call(alice, agentZ, 'u3', DAY1 + 10 * 86_400_000, [
      { asr: 0, llmTtfb: 40, tts: 10, total: 100 }, // typed in: no ASR time
      { asr: 200, llmTtfb: 60, tts: 30, total: 300 },
    ]);
    const [conv] = await infra.sql<{ id: string }[]>`select id from conversations where session_id = ${session}`;
    // A caller row posted through the records API carrying reply-only fields.
    const posted = await api(cp, 'POST', '/api/v1/conversations/messages', {
      token: alice.token,
      body: { conversation_id: conv!.id, turn_number: 3, role: 'user', content: 'hi', asr_latency_ms: 100, llm_latency_ms: 5000, tts_latency_ms: 4000, total_latency_ms: 9000, internal_overhead_ms: 3000 },
    });
    expect(posted.status, JSON.stringify(posted.body)).toBe(201);
    const res = await get('latency', `session_id=${encodeURIComponent(session)}`);
    const byType = Object.fromEntries(res.body.data.map((m: any) => [`${m.metric_type}/${m.provider}`, [m.avg_latency_ms, m.count]]));
    expect(byType).toEqual({
      'asr_latency/sim': [200, 1], // the spoken turn; the typed turn's 0 left out
      'asr_latency/': [100, 1], // the posted caller row (no provider named)
      'llm_latency/openai': [50, 2],
      'tts_latency/sim': [20, 2],
      'total_latency/': [200, 2],
      'internal_overhead/': [20, 2],
    });
  });
});

describe('GET /analytics/usage', () => {
  it('per user: sessions, conversations, messages, duration, avg/p95/p99 reply latency', async () => {
    const res = await get('usage', RANGE);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // u1 latencies sorted 200, 400, 600, 700: p95 at 0.95 x 3 = 2.85 -> 600 + 0.85 x 100 = 685; p99 -> 697.
    expect(res.body.data).toEqual([
      { user_id: 'u1', total_sessions: 2, total_conversations: 2, total_messages: 10, total_duration_ms: 2 * DURATION_MS, avg_latency_ms: 475, p95_latency_ms: 685, p99_latency_ms: 697 },
      { user_id: 'u2', total_sessions: 1, total_conversations: 1, total_messages: 2, total_duration_ms: DURATION_MS, avg_latency_ms: 1500, p95_latency_ms: 1500, p99_latency_ms: 1500 },
    ]);
  });

  it('meta says how many users there were: a cut at 200 rows is visible', async () => {
    expect((await get('usage', RANGE)).body.meta).toEqual({ total_users: 2, truncated: false });
    // 201 users of bob's, ten days later (no turns: conversations only).
    const at = DAY1 + 10 * 86_400_000;
    for (let i = 0; i < 201; i++) {
      const sc = sessionConfig({ agent_id: bobAgent, workspace_id: bob.workspaceId });
      const rec = writer.recorderFor(sc);
      rec.start({ session_id: sc.session_id, agent_id: bobAgent, user_id: `many-${i}`, workspace_id: bob.workspaceId, metadata: {}, started_at_ms: at + i });
      rec.end(endRecord(0, at + i));
    }
    await writer.flush();
    const many = await get('usage', 'from=2026-03-20&to=2026-03-20', bob.token);
    expect(many.status, JSON.stringify(many.body)).toBe(200);
    expect(many.body.data).toHaveLength(200);
    expect(many.body.meta).toEqual({ total_users: 201, truncated: true });
  });

  it('filters by user and by agent', async () => {
    const u2 = await get('usage', `user_id=u2&${RANGE}`);
    expect(u2.body.data.map((r: any) => r.user_id)).toEqual(['u2']);
    const y = await get('usage', `agent_id=${agentY}&${RANGE}`);
    expect(y.body.data).toHaveLength(1);
    expect(y.body.data[0]).toMatchObject({ user_id: 'u2', total_conversations: 1 });
    // Two days: the next day's call of u1 joins (its single reply took 9000 ms): 10900 / 5.
    const two = await get('usage', `user_id=u1&agent_id=${agentX}&from=2026-03-10&to=2026-03-11`);
    expect(two.body.data[0]).toMatchObject({ total_sessions: 3, total_conversations: 3, total_messages: 12, avg_latency_ms: 2180 });
  });
});

describe('GET /analytics/tool-calls', () => {
  it('per tool: counts, success rate, min/avg/p50/p95/max latency across the workspace', async () => {
    const res = await get('tool-calls', RANGE);
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    // lookup_order 10, 90, 250: p50 90; p95 at 0.95 x 2 = 1.9 -> 90 + 0.9 x 160 = 234.
    expect(res.body.data).toEqual([
      { tool_name: 'lookup_order', call_count: 3, success_count: 2, error_count: 1, success_rate: 0.6667, avg_latency_ms: 116.67, min_latency_ms: 10, max_latency_ms: 250, p50_latency_ms: 90, p95_latency_ms: 234 },
      { tool_name: 'weather', call_count: 1, success_count: 1, error_count: 0, success_rate: 1, avg_latency_ms: 30, min_latency_ms: 30, max_latency_ms: 30, p50_latency_ms: 30, p95_latency_ms: 30 },
    ]);
  });

  it('by agent and by session', async () => {
    const x = await get('tool-calls', `agent_id=${agentX}&${RANGE}`);
    // 90, 250: p50 at 0.5 -> 170; p95 at 0.95 -> 90 + 0.95 x 160 = 242.
    expect(x.body.data[0]).toEqual({ tool_name: 'lookup_order', call_count: 2, success_count: 1, error_count: 1, success_rate: 0.5, avg_latency_ms: 170, min_latency_ms: 90, max_latency_ms: 250, p50_latency_ms: 170, p95_latency_ms: 242 });
    const a = await get('tool-calls', `session_id=${encodeURIComponent(sessionA)}`);
    expect(a.body.data.map((m: any) => [m.tool_name, m.call_count])).toEqual([['lookup_order', 2]]);
  });

  it('the Connect route answers the same as REST', async () => {
    const client = createClient(SystemAnalyticsService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    const out = await client.getToolMetrics({ agentId: agentX, from: '2026-03-10', to: '2026-03-10' }, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(out.metrics.map((m) => [m.toolName, m.callCount, m.p95LatencyMs])).toEqual([
      ['lookup_order', 2, 242],
      ['weather', 1, 30],
    ]);
  });
});

describe('fencing', () => {
  it("another tenant's agent, session or workspace is 404", async () => {
    expectNotFound(await get('latency', `agent_id=${agentX}`, bob.token));
    expectNotFound(await get('usage', `agent_id=${agentX}`, bob.token));
    expectNotFound(await get('tool-calls', `session_id=${encodeURIComponent(sessionA)}`, bob.token));
    expectNotFound(await get('latency', `session_id=${encodeURIComponent(bobSession)}`));
    expectNotFound(await get('usage', `workspace_id=${bob.workspaceId}`));
    // A session of the workspace but of another agent than the one named: not in that scope.
    expectNotFound(await get('latency', `session_id=${encodeURIComponent(sessionA)}&agent_id=${agentY}`));
  });

  it('without filters each caller sees only their own workspaces', async () => {
    const tools = await get('tool-calls', RANGE);
    expect(tools.body.data.map((m: any) => m.tool_name)).not.toContain('secret_tool');
    const bobs = await get('tool-calls', RANGE, bob.token);
    expect(bobs.body.data.map((m: any) => [m.tool_name, m.call_count])).toEqual([['secret_tool', 1]]);
    const bobUsage = await get('usage', RANGE, bob.token);
    expect(bobUsage.body.data).toEqual([expect.objectContaining({ user_id: 'u1', total_conversations: 1, avg_latency_ms: 7777 })]);
  });

  it('system health is for the organization owner (403 for others); no credential is 401', async () => {
    const res = await get('system-health', '');
    expect(res.status).toBe(403);
    expect(res.body.error.code).toBe('FORBIDDEN');
    expect((await api(cp, 'GET', `${A}/latency`)).status).toBe(401);
  });
});

describe('bad input names the field', () => {
  it.each([
    ['latency', 'agent_id=not-a-uuid', 'agent_id'],
    ['usage', 'workspace_id=123', 'workspace_id'],
    ['latency', `session_id=${'s'.repeat(257)}`, 'session_id'],
    ['usage', `user_id=${'u'.repeat(257)}`, 'user_id'],
    ['tool-calls', 'from=2026-02-30', 'from'],
    ['tool-calls', 'from=2026-03-12&to=2026-03-10', 'from'],
    ['latency', 'from=2026-01-01&to=2026-06-01', 'to'],
    // Unknown parameters, and parameters of another route.
    ['latency', 'agent=abc', 'agent'],
    ['usage', 'session_id=abc', 'session_id'],
    ['tool-calls', 'user_id=u1', 'user_id'],
    ['latency', 'limit=5', 'limit'],
  ])('%s?%s -> 400 %s', async (route, query, field) => {
    expectInvalid(await get(route, query), field);
  });

  it('system-health takes no parameters', async () => {
    expectInvalid(await get('system-health', 'verbose=1', ORG_KEY), 'verbose');
  });

  it('gRPC / Connect callers get the same check on fields of another route', async () => {
    const client = createClient(SystemAnalyticsService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    await expect(client.getUsage({ sessionId: sessionA }, { headers: { authorization: `Bearer ${alice.token}` } })).rejects.toMatchObject({ code: 3 });
  });
});

describe('GET /analytics/system-health', () => {
  it('shows this control plane (its own row) and the engine node (collected from its registry heartbeat)', async () => {
    let records: any[] = [];
    await vi.waitFor(
      async () => {
        const res = await get('system-health', '', ORG_KEY);
        expect(res.status, JSON.stringify(res.body)).toBe(200);
        // One record per service (the spec's "latest health record per service"), each process under it.
        expect(res.body.data.map((r: any) => r.service_name).sort()).toEqual(['control-plane', 'media-engine']);
        records = res.body.data.flatMap((r: any) => r.processes);
        expect(records.map((r) => `${r.service_name}/${r.node_id}`)).toEqual(expect.arrayContaining(['control-plane/cp-under-test', 'media-engine/engine-under-test']));
        // A report written after this suite's earlier requests (a loaded machine can be a report behind).
        expect(records.find((r) => r.node_id === 'cp-under-test').request_count).toBeGreaterThan(10);
      },
      { timeout: 10_000, interval: 100 },
    );
    const seen = JSON.stringify(records);
    const own = records.find((r) => r.node_id === 'cp-under-test');
    expect(own, seen).toMatchObject({ service_name: 'control-plane', status: 'healthy' });
    expect(own.memory_usage).toBeGreaterThan(10_000_000);
    expect(own.heap_used_bytes).toBeGreaterThan(0);
    // This suite's requests so far, answered by this process.
    expect(own.request_count, seen).toBeGreaterThan(10);
    expect(own.cpu_usage).toBeGreaterThanOrEqual(0);
    const node = records.find((r) => r.node_id === 'engine-under-test');
    expect(node, seen).toMatchObject({ service_name: 'media-engine', status: 'healthy', active_calls: 0, active_connections: 0 });
    expect(node.memory_usage).toBeGreaterThan(10_000_000);
    expect(node.avg_response_ms).toBeNull(); // no reply played since the last heartbeat (the spec lists the field: null, not absent)
    // Latest only: one record per process, however many reports are stored.
    expect(records.filter((r) => r.node_id === 'cp-under-test')).toHaveLength(1);
    const [{ n }] = await infra.sql<{ n: number }[]>`select count(*)::int as n from system_health where node_id = 'cp-under-test'`;
    expect(n, seen).toBeGreaterThan(1);
  });

  it('a control plane that shut down cleanly is `stopped`; a process that went silent is `stale`', async () => {
    const second = await startControlPlane(infra, { port: 0, host: '127.0.0.1', nodeId: 'cp-second' });
    await second.close();
    const silentAt = new Date(Date.now() - 30_000);
    await infra.sql`insert into system_health (service_name, node_id, status, cpu_usage, memory_rss_bytes, heap_used_bytes, active_connections, active_calls, request_count, error_count, uptime_seconds, recorded_at)
      values ('media-engine', 'silent-node', 'healthy', 1, 1, 1, 0, 0, 0, 0, 1, ${silentAt})`;
    const res = await get('system-health', '', ORG_KEY);
    const status = Object.fromEntries(res.body.data.flatMap((r: any) => r.processes).map((r: any) => [r.node_id, r.status]));
    expect(status).toMatchObject({ 'cp-second': 'stopped', 'silent-node': 'stale', 'cp-under-test': 'healthy' });
    // The service record is the newest report of any process: never the stopped or silent one
    // while a live process reports after it.
    const services = Object.fromEntries(res.body.data.map((r: any) => [r.service_name, r]));
    expect(services['control-plane']).toMatchObject({ status: 'healthy' });
    expect(services['control-plane'].node_id).not.toBe('cp-second');
    expect(services['control-plane'].processes[0]).toMatchObject({ node_id: services['control-plane'].node_id, processes: [] });
    expect(services['media-engine']).toMatchObject({ node_id: 'engine-under-test', status: 'healthy' });
  });

  it('the collector job prunes reports older than the retention', async () => {
    const old = new Date(Date.now() - 200 * 3_600_000);
    await infra.sql`insert into system_health (service_name, node_id, status, cpu_usage, memory_rss_bytes, heap_used_bytes, active_connections, active_calls, request_count, error_count, uptime_seconds, recorded_at)
      values ('media-engine', 'gone-node', 'healthy', 1, 1, 1, 0, 0, 0, 0, 1, ${old})`;
    await vi.waitFor(
      async () => {
        const [{ n }] = await infra.sql<{ n: number }[]>`select count(*)::int as n from system_health where node_id = 'gone-node'`;
        expect(n).toBe(0);
      },
      { timeout: 10_000, interval: 100 },
    );
  });

  it('a heartbeat collected twice is stored once', async () => {
    const beatAtMs = Date.now() - 1000;
    const health = { status: 'healthy' as const, cpuUsage: 12.5, memoryRssBytes: 50_000_000, heapUsedBytes: 20_000_000, activeConnections: 3, activeCalls: 2, requestCount: 40, errorCount: 1, avgResponseMs: null, uptimeSeconds: 99 };
    await infra.registry.nodes.heartbeat({ nodeId: 'still-node', wsUrl: 'ws://127.0.0.1:1', capacity: 10, load: 2, updatedAtMs: beatAtMs, health }, 60_000);
    const reporter = cp.systemAnalytics.reporter!;
    const first = await reporter.collect();
    expect(first.collected).toBeGreaterThanOrEqual(2);
    await reporter.collect();
    const rows = await infra.sql`select status, cpu_usage, memory_rss_bytes::float8 as rss, active_connections, active_calls, request_count::int as requests, error_count::int as errors, recorded_at from system_health where node_id = 'still-node'`;
    expect(rows).toEqual([{ status: 'healthy', cpu_usage: 12.5, rss: 50_000_000, active_connections: 3, active_calls: 2, requests: 40, errors: 1, recorded_at: new Date(beatAtMs) }]);
    await infra.registry.nodes.removeNode('still-node');
  });
});
