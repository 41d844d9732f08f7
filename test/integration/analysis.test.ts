/**
 * Issue 16, "Analysis" (first slice): schemas bound to a sim agent; a call the engine ends itself
 * (rows written by the record writer, as in post-call.summaries.test.ts) gets one result per
 * schema through the real path: writer -> trigger -> outbox -> relay -> `analysis.extract` job ->
 * the agent's published LLM -> `analysis_results`; results and insights via their routes; a
 * failing LLM stores `failed`; fencing; bad input names the field.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { defaultLlmFactory } from '../../control-plane/conversations/summary.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { AnalysisService } from '../../shared/gen/voiceplane/v1/analysis_pb.js';
import { createOutboundClient, type OutboundClient } from '../../shared/outbound/index.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const A = '/api/v1/conversations/analysis';
/** The published model name that makes the analysis LLM fail like a provider outage. */
const BROKEN_MODEL = 'outage';

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let bob: TestUser;
let writer: ConversationWriter;
let outbound: OutboundClient;
let brokenCalls = 0;

const FIELDS = [
  { name: 'reason', type: 'enum', enum: ['refund', 'delivery', 'other'], description: 'why the caller called' },
  { name: 'order_number', type: 'number' },
  { name: 'refund_requested', type: 'boolean' },
  { name: 'order_issue', type: 'string' },
  { name: 'order_lines', type: 'string[]' },
];

beforeAll(async () => {
  infra = await startTestInfra();
  outbound = createOutboundClient({ clock: infra.clock });
  const real = defaultLlmFactory(infra.clock, outbound);
  cp = await startControlPlane(infra, {
    port: 0,
    host: '127.0.0.1',
    jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'analysis.extract': { retryDelaySeconds: 1, retryBackoff: false } } },
    postCallSweepMs: 500,
    analysisLlmFor: async (settings) => {
      if (settings.model_name !== BROKEN_MODEL) return real(settings);
      return {
        label: 'outage',
        model: BROKEN_MODEL,
        capabilities: { tools: true, parallelToolCalls: false },
        // eslint-disable-next-line require-yield
        async *stream() {
          brokenCalls++;
          throw new Error('provider down: 503 from upstream');
        },
      } satisfies LlmProvider;
    },
  });
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
});

afterAll(async () => {
  await writer?.close();
  await cp?.close();
  await outbound?.close();
  await infra?.close();
});

async function publishedAgent(name: string, model = ''): Promise<string> {
  const id = await createAgent(cp as never, infra, alice, alice.workspaceId, name);
  const prov = await api(cp, 'POST', `/api/v1/agents/${id}/providers`, { token: alice.token, body: { provider_type: 'llm', provider_name: 'sim', model_name: model } });
  expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
  const pub = await api(cp, 'POST', `/api/v1/agents/${id}/versions/publish`, { token: alice.token });
  expect(pub.status, JSON.stringify(pub.body)).toBeLessThan(300);
  return id;
}

async function createSchema(agentId: string, fields: unknown = FIELDS, token = alice.token) {
  return api(cp, 'POST', `${A}/schemas`, { token, body: { agent_id: agentId, name: 'Call facts', description: 'what the caller wanted', fields } });
}

/** A call the engine ends itself: the record writer writes start, one turn and the end. */
async function engineEndedCall(agentId: string, userText: string, assistantText: string): Promise<string> {
  const sc = sessionConfig({ agent_id: agentId, workspace_id: alice.workspaceId });
  const rec = writer.recorderFor(sc);
  const t0 = Date.now();
  rec.start({ session_id: sc.session_id, agent_id: agentId, workspace_id: alice.workspaceId, user_id: 'caller-1', metadata: {}, started_at_ms: t0 });
  rec.turn({ ...turnRecord(1, { startedAtMs: t0 + 1000 }), user_text: userText, assistant_text: assistantText });
  rec.end(endRecord(1, t0));
  await writer.flush();
  return rec.conversationId;
}

async function resultsOf(conversationId: string, token = alice.token) {
  return api(cp, 'GET', `${A}/results?conversation_id=${conversationId}`, { token });
}

function expectInvalid(res: { status: number; body: any }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('INVALID_REQUEST');
  expect(res.body.error.details[0].field).toBe(field);
}

describe('extraction on completed calls (sim LLM)', () => {
  it('an engine-ended call gets one complete result per active schema, with the sim keyword values', { timeout: 30_000 }, async () => {
    const agent = await publishedAgent('Analysis sim');
    const created = await createSchema(agent);
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    expect(created.body.data).toMatchObject({ agent_id: agent, is_active: true, fields: expect.arrayContaining([expect.objectContaining({ name: 'reason', enum: ['refund', 'delivery', 'other'] })]) });
    const inactive = await api(cp, 'POST', `${A}/schemas`, { token: alice.token, body: { agent_id: agent, name: 'Off', fields: [{ name: 'x', type: 'string' }], is_active: false } });
    expect(inactive.status).toBe(201);

    const id = await engineEndedCall(agent, 'My order 1234 never arrived, I want a refund.', 'I have re-sent order 1234.');
    await expect.poll(async () => (await resultsOf(id)).body.data?.length, { timeout: 15_000, interval: 200 }).toBe(1);
    const res = await resultsOf(id);
    expect(res.body.meta).toEqual({ page: 1, per_page: 20, total: 1, total_pages: 1 });
    const r = res.body.data[0];
    expect(r).toMatchObject({ conversation_id: id, schema_id: created.body.data.id, schema_name: 'Call facts', status: 'complete', model: 'sim/sim-1', attempts: 1 });
    expect(r.values).toEqual({
      reason: 'refund',
      order_number: 1234,
      refund_requested: true,
      order_issue: 'Caller: My order 1234 never arrived, I want a refund.',
      order_lines: ['Caller: My order 1234 never arrived, I want a refund.', 'Agent: I have re-sent order 1234.'],
    });

    // A retried (or duplicated) job adds nothing: one result per (conversation, schema).
    const again = await cp.jobs.enqueue('analysis.extract', { conversation_id: id }, { singletonKey: `${id}:again` });
    await expect.poll(async () => (await cp.jobs.state('analysis.extract', again!))?.state, { timeout: 10_000, interval: 100 }).toBe('completed');
    expect((await resultsOf(id)).body.meta.total).toBe(1);

    // Insights over a second call.
    const id2 = await engineEndedCall(agent, 'Where is my delivery? It is late.', 'It arrives tomorrow.');
    await expect.poll(async () => (await resultsOf(id2)).body.data?.length, { timeout: 15_000, interval: 200 }).toBe(1);
    const byAgent = await api(cp, 'GET', `${A}/results?agent_id=${agent}&limit=1`, { token: alice.token });
    expect(byAgent.body.meta).toEqual({ page: 1, per_page: 1, total: 2, total_pages: 2 });
    const ins = await api(cp, 'GET', `${A}/insights?agent_id=${agent}`, { token: alice.token });
    expect(ins.status, JSON.stringify(ins.body)).toBe(200);
    expect(ins.body.data).toMatchObject({ agent_id: agent, calls_covered: 2 });
    expect(ins.body.data.period_start).toBeTruthy();
    const facts = ins.body.data.schemas.find((s: any) => s.name === 'Call facts');
    expect(facts).toMatchObject({ calls_covered: 2, failed: 0 });
    const field = (n: string) => facts.fields.find((f: any) => f.name === n);
    expect(field('reason').values).toEqual([
      { value: 'delivery', count: 1 },
      { value: 'refund', count: 1 },
    ]);
    expect(field('refund_requested').values).toEqual([
      { value: 'false', count: 1 },
      { value: 'true', count: 1 },
    ]);
    // The second call states no number: only one answer.
    expect(field('order_number')).toMatchObject({ answered: 1, mean: 1234, p50: 1234, p95: 1234 });
    expect(field('order_lines').answered).toBe(2);
    expect(field('order_lines').values).toContainEqual({ value: 'Agent: I have re-sent order 1234.', count: 1 });

    // Statistics are rounded to two decimals: 10, 20, 30, 45 and the 1234 above: p95 at position
    // 3.8 = 45 + 0.8 x 1189 = 996.2 (the float sum has noise past the second decimal).
    const [schemaRow] = await infra.sql<{ id: string }[]>`select id from analysis_schemas where id = ${facts.schema_id}`;
    for (const n of [10, 20, 30, 45]) {
      const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
      const [conv] = await infra.sql<{ id: string }[]>`
        insert into conversations (id, session_id, agent_id, workspace_id, status) values (gen_random_uuid(), ${sc.session_id}, ${agent}, ${alice.workspaceId}, 'completed') returning id`;
      await infra.sql`insert into analysis_results (id, conversation_id, schema_id, agent_id, workspace_id, status, "values")
        values (gen_random_uuid(), ${conv!.id}, ${schemaRow!.id}, ${agent}, ${alice.workspaceId}, 'complete', ${infra.sql.json({ order_number: n })})`;
    }
    const rounded = await api(cp, 'GET', `${A}/insights?agent_id=${agent}`, { token: alice.token });
    const stats = rounded.body.data.schemas.find((s: any) => s.name === 'Call facts').fields.find((f: any) => f.name === 'order_number');
    expect(stats).toMatchObject({ answered: 5, mean: 267.8, p50: 30, p95: 996.2 });
  });

  it('a job per active schema, each one ask, so a crashed job stays short whatever the number of schemas', { timeout: 30_000 }, async () => {
    const agent = await publishedAgent('Analysis two schemas');
    const first = await createSchema(agent);
    const second = await api(cp, 'POST', `${A}/schemas`, { token: alice.token, body: { agent_id: agent, name: 'Second', fields: [{ name: 'order_number', type: 'number' }] } });
    expect([first.status, second.status]).toEqual([201, 201]);
    const id = await engineEndedCall(agent, 'My order 77 is late.', 'Order 77 ships today.');
    await expect.poll(async () => (await resultsOf(id)).body.data?.length, { timeout: 15_000, interval: 200 }).toBe(2);
    const results = (await resultsOf(id)).body.data as Array<{ schema_id: string; status: string }>;
    expect(results.map((r) => [r.schema_id, r.status]).sort()).toEqual([[first.body.data.id, 'complete'], [second.body.data.id, 'complete']].sort());
    const jobs = await infra.sql.unsafe(`select data->>'schema_id' as schema_id, singleton_key from "${cp.jobs.schema}".job where name = 'analysis.extract' and data->>'conversation_id' = $1`, [id]);
    expect(jobs.map((j) => j.schema_id).sort()).toEqual([first.body.data.id, second.body.data.id].sort());
    expect(jobs.map((j) => j.singleton_key).sort()).toEqual([`${id}:${first.body.data.id}`, `${id}:${second.body.data.id}`].sort());
  });

  it('a failed call gets no analysis', { timeout: 15_000 }, async () => {
    const agent = await publishedAgent('Analysis failed call');
    expect((await createSchema(agent)).status).toBe(201);
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
    const [conv] = await infra.sql`
      insert into conversations (id, session_id, agent_id, workspace_id, status) values (gen_random_uuid(), ${sc.session_id}, ${agent}, ${alice.workspaceId}, 'failed') returning id`;
    await cp.postCall.drain();
    const jobs = await infra.sql.unsafe(`select count(*)::int as n from "${cp.jobs.schema}".job where name = 'analysis.extract' and data->>'conversation_id' = $1`, [conv.id]);
    expect(jobs[0].n).toBe(0);
    expect((await resultsOf(conv.id)).body.meta.total).toBe(0);
  });
});

describe('failing LLM', () => {
  it('the provider outage is retried, then the result is stored failed with the error', { timeout: 30_000 }, async () => {
    const agent = await publishedAgent('Analysis outage', BROKEN_MODEL);
    expect((await createSchema(agent)).status).toBe(201);
    const before = brokenCalls;
    const id = await engineEndedCall(agent, 'I want a refund.', 'Sure.');
    await expect.poll(async () => (await resultsOf(id)).body.data?.length, { timeout: 20_000, interval: 200 }).toBe(1);
    const r = (await resultsOf(id)).body.data[0];
    expect(r).toMatchObject({ status: 'failed', values: {}, model: `sim/${BROKEN_MODEL}` });
    expect(r.error).toContain('provider down');
    // 1 attempt + 2 retries (QUEUE_SETTINGS['analysis.extract'].retryLimit)
    expect(brokenCalls - before).toBe(3);
  });
});

describe('schemas: validation, roles, fencing, gRPC', () => {
  let agent: string;
  let schemaId: string;
  beforeAll(async () => {
    agent = await publishedAgent('Analysis fenced');
    const c = await createSchema(agent);
    expect(c.status).toBe(201);
    schemaId = c.body.data.id;
  });

  it('bad input is 400 naming the field', async () => {
    expectInvalid(await createSchema(agent, []), 'fields');
    expectInvalid(await createSchema(agent, 'reason'), 'fields');
    expectInvalid(await createSchema(agent, [{ name: 'a', type: 'string' }, { name: 'A', type: 'number' }]), 'fields[1].name');
    expectInvalid(await createSchema(agent, [{ name: 'a', type: 'date' }]), 'fields[0].type');
    expectInvalid(await createSchema(agent, [{ name: 'a', type: 'enum' }]), 'fields[0].enum');
    expectInvalid(await createSchema(agent, [{ name: 'a', type: 'enum', enum: [] }]), 'fields[0].enum');
    expectInvalid(await createSchema(agent, [{ name: 'a', type: 'string', enum: ['x'] }]), 'fields[0].enum');
    expectInvalid(await createSchema(agent, [{ name: '1a', type: 'string' }]), 'fields[0].name');
    expectInvalid(await createSchema(agent, Array.from({ length: 51 }, (_, i) => ({ name: `f${i}`, type: 'string' }))), 'fields');
    expect((await createSchema(agent, Array.from({ length: 50 }, (_, i) => ({ name: `f${i}`, type: 'string' })))).status).toBe(201);
    expectInvalid(await api(cp, 'POST', `${A}/schemas`, { token: alice.token, body: { agent_id: agent, fields: FIELDS } }), 'name');
    expectInvalid(await api(cp, 'PUT', `${A}/schemas/${schemaId}`, { token: alice.token, body: { fields: [] } }), 'fields');
    expectInvalid(await api(cp, 'GET', `${A}/results`, { token: alice.token }), 'conversation_id');
    expectInvalid(await api(cp, 'GET', `${A}/insights`, { token: alice.token }), 'agent_id');
  });

  it('update and delete', async () => {
    const put = await api(cp, 'PUT', `${A}/schemas/${schemaId}`, { token: alice.token, body: { is_active: false, fields: [{ name: 'ok', type: 'boolean' }] } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data).toMatchObject({ name: 'Call facts', is_active: false, fields: [{ name: 'ok', type: 'boolean', enum: [] }] });
    const list = await api(cp, 'GET', `${A}/schemas?agent_id=${agent}`, { token: alice.token });
    expect(list.body.data.map((s: any) => s.id)).toContain(schemaId);
    const del = await api(cp, 'POST', `${A}/schemas`, { token: alice.token, body: { agent_id: agent, name: 'Tmp', fields: [{ name: 'x', type: 'string' }] } });
    const gone = await api(cp, 'DELETE', `${A}/schemas/${del.body.data.id}`, { token: alice.token });
    expect(gone.body.data).toEqual({ status: 'deleted' });
    expect((await api(cp, 'DELETE', `${A}/schemas/${del.body.data.id}`, { token: alice.token })).status).toBe(404);
  });

  it("another tenant's agent, conversation or schema answers exactly as an unknown one (status, code, message)", async () => {
    const conv = await engineEndedCall(agent, 'hello', 'hi');
    const stranger = await createTestUser(cp);
    const unknown = newId();
    const answer = async (method: 'GET' | 'POST' | 'PUT' | 'DELETE', path: string, body?: unknown) => {
      const res = await api(cp, method, path, { token: stranger.token, body });
      return { status: res.status, error: res.body.error };
    };
    for (const [method, route, body] of [
      ['GET', (id: string) => `${A}/schemas?agent_id=${id}`],
      ['POST', () => `${A}/schemas`, (id: string) => ({ agent_id: id, name: 'x', fields: FIELDS })],
      ['GET', (id: string) => `${A}/results?agent_id=${id}`],
      ['GET', (id: string) => `${A}/insights?agent_id=${id}`],
    ] as const) {
      const foreign = await answer(method, route(agent), body?.(agent));
      expect(foreign, `${method} ${route('{id}')}`).toEqual(await answer(method, route(unknown), body?.(unknown)));
      expect(foreign).toMatchObject({ status: 404, error: { code: 'NOT_FOUND', message: 'agent not found' } });
    }
    const byConversation = await answer('GET', `${A}/results?conversation_id=${conv}`);
    expect(byConversation).toEqual(await answer('GET', `${A}/results?conversation_id=${unknown}`));
    expect(byConversation).toMatchObject({ status: 404, error: { message: 'conversation not found' } });
    for (const method of ['PUT', 'DELETE'] as const) {
      const foreign = await answer(method, `${A}/schemas/${schemaId}`, method === 'PUT' ? { name: 'x' } : undefined);
      expect(foreign, method).toEqual(await answer(method, `${A}/schemas/${unknown}`, method === 'PUT' ? { name: 'x' } : undefined));
      expect(foreign).toMatchObject({ status: 404, error: { message: 'analysis schema not found' } });
    }
  });

  it('other workspaces get 404 on every route; a plain member reads but may not write (403)', async () => {
    const conv = await engineEndedCall(agent, 'hello', 'hi');
    for (const [method, path, body] of [
      ['GET', `${A}/schemas?agent_id=${agent}`],
      ['POST', `${A}/schemas`, { agent_id: agent, name: 'x', fields: FIELDS }],
      ['PUT', `${A}/schemas/${schemaId}`, { name: 'stolen' }],
      ['DELETE', `${A}/schemas/${schemaId}`],
      ['GET', `${A}/results?agent_id=${agent}`],
      ['GET', `${A}/results?conversation_id=${conv}`],
      ['GET', `${A}/insights?agent_id=${agent}`],
    ] as const) {
      const res = await api(cp, method, path, { token: bob.token, body });
      expect(res.status, `${method} ${path}`).toBe(404);
    }
    const add = await api(cp, 'POST', `/api/v1/auth/workspaces/${alice.workspaceId}/members`, { token: alice.token, body: { email: bob.email, role: 'member' } });
    expect(add.status, JSON.stringify(add.body)).toBe(201);
    expect((await api(cp, 'GET', `${A}/schemas?agent_id=${agent}`, { token: bob.token })).status).toBe(200);
    expect((await api(cp, 'PUT', `${A}/schemas/${schemaId}`, { token: bob.token, body: { name: 'x' } })).status).toBe(403);
    expect((await createSchema(agent, FIELDS, bob.token)).status).toBe(403);
  });

  it('the same service over Connect', async () => {
    const client = createClient(AnalysisService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    const res = await client.listAnalysisSchemas({ agentId: agent }, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(res.schemas.map((s) => s.id)).toContain(schemaId);
  });
});
