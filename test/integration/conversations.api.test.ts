/**
 * Every Conversations route of spec document 2 over REST (envelope family), plus one call each
 * over gRPC (@grpc/grpc-js) and Connect: filters, pagination edges, fencing (another user's data
 * is 404, never 403), idempotent creates, message PATCH rules, summary and agent count, health.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { ConversationService } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { grpcClient } from '../helpers/grpc.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { createAgent, startConversationsServer, type Harness } from '../unit/records/control-plane.js';

let infra: TestInfra;
let h: Harness;
let alice: TestUser;
let bob: TestUser;
let aliceWs2: string;
let a1: string;
let a2: string;
let a3: string;
let bobAgent: string;
const C = '/api/v1/conversations';
/** When set, the summary job's next agent-config lookup for this agent waits here (a race under test). */
let liveConfigGate: { agentId: string; entered: () => void; release: Promise<void>; answer?: Record<string, unknown> } | null = null;

/** Holds the next summary job of `agentId` inside its decision: `entered` once it is there; `release()` lets it go on (with `answer` as the agent's config). */
function holdSummaryJob(agentId: string, answer?: Record<string, unknown>): { entered: Promise<void>; release: () => void } {
  let release!: () => void;
  const entered = new Promise<void>((resolve) => {
    liveConfigGate = { agentId, entered: resolve, release: new Promise<void>((r) => (release = r)), answer };
  });
  return { entered, release };
}

/** The summary outcome after the skipped one(s): `lost` names the failure if none comes in 15 s. */
function summaryAfterSkips(conversationId: string, lost: string) {
  return Promise.race([
    h.conversations.summarizer.waitFor(conversationId, (o) => o.status !== 'skipped'),
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(lost)), 15_000)),
  ]);
}

beforeAll(async () => {
  infra = await startTestInfra();
  h = await startConversationsServer(infra, {
    liveConfig: async (agentId) => {
      const gate = liveConfigGate;
      if (gate?.agentId === agentId) {
        liveConfigGate = null;
        gate.entered();
        await gate.release;
        if (gate.answer) return gate.answer;
      }
      return { providers: { llm: { provider_name: 'sim' } } };
    },
  });
  alice = await createTestUser(h);
  bob = await createTestUser(h);
  const ws = await api(h, 'POST', '/api/v1/auth/workspaces', { token: alice.token, body: { name: 'second' } });
  expect(ws.status).toBe(201);
  aliceWs2 = ws.body.data.id;
  a1 = await createAgent(h, infra, alice, alice.workspaceId, 'A1');
  a2 = await createAgent(h, infra, alice, alice.workspaceId, 'A2');
  a3 = await createAgent(h, infra, alice, aliceWs2, 'A3');
  bobAgent = await createAgent(h, infra, bob, bob.workspaceId, 'B1');
});

afterAll(async () => {
  await h?.close();
  await infra?.close();
});

const as = (u: TestUser) => ({
  get: (p: string) => api(h, 'GET', p, { token: u.token }),
  post: (p: string, body: unknown) => api(h, 'POST', p, { token: u.token, body }),
  put: (p: string, body: unknown) => api(h, 'PUT', p, { token: u.token, body }),
  patch: (p: string, body: unknown, rawBody?: string) => api(h, 'PATCH', p, { token: u.token, body, rawBody }),
});

async function conversation(u: TestUser, agentId: string, extra: Record<string, unknown> = {}) {
  const res = await as(u).post(C, { session_id: `s-${newId()}`, agent_id: agentId, ...extra });
  expect(res.status, JSON.stringify(res.body)).toBe(201);
  return res.body.data as Record<string, any>;
}

describe('create, read, update', () => {
  it('POST creates an active conversation (201); the same id and body again returns it; a different body is 409', async () => {
    const id = newId();
    const body = { id, session_id: `s-${id}`, user_id: 'end-user-7', agent_id: a1, metadata: { call_direction: 'outbound' } };
    const r1 = await as(alice).post(C, body);
    expect(r1.status).toBe(201);
    expect(r1.body).toMatchObject({ success: true, error: null, data: { id, status: 'active', user_id: 'end-user-7', agent_id: a1, workspace_id: alice.workspaceId, total_turns: 0, metadata: { call_direction: 'outbound' } } });
    expect(r1.body.data).toHaveProperty('ended_at', null);
    // Present only on folded multi-segment rows (the spec): absent here, not null.
    expect(r1.body.data).not.toHaveProperty('call_id');
    expect(r1.body.data).not.toHaveProperty('segment_pattern');
    const r2 = await as(alice).post(C, body);
    expect(r2.status).toBe(201);
    expect(r2.body.data).toEqual(r1.body.data);
    expect((await as(alice).post(C, { ...body, metadata: { other: 1 } })).status).toBe(409);
    expect((await as(alice).post(C, { ...body, id: newId() })).body.error.code).toBe('CONFLICT'); // session taken
  });

  it('POST validates and fences the agent', async () => {
    expect((await as(alice).post(C, { agent_id: a1 })).body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ field: 'session_id' }] });
    expect((await as(alice).post(C, { session_id: 'x', agent_id: 'nope' })).status).toBe(400);
    expect((await as(alice).post(C, { session_id: 'x', agent_id: a1, id: 'not-a-uuid' })).status).toBe(400);
    const other = await as(alice).post(C, { session_id: `s-${newId()}`, agent_id: bobAgent });
    expect(other.status).toBe(404);
    expect(other.body).toMatchObject({ success: false, data: null, error: { code: 'NOT_FOUND' } });
    expect((await api(h, 'POST', C, { body: { session_id: 'x', agent_id: a1 } })).status).toBe(401);
  });

  it('PUT completes a conversation, returns {id, status}, and with agent_id fills the summary asynchronously', async () => {
    const c = await conversation(alice, a1);
    const m = await as(alice).post(`${C}/messages`, { conversation_id: c.id, turn_number: 1, role: 'user', content: 'I would like to book a table' });
    expect(m.status).toBe(201);
    const put = await as(alice).put(`${C}/${c.id}`, { status: 'completed', total_turns: 1, total_duration_ms: 4000, avg_response_latency_ms: 700 });
    expect(put.body.data).toEqual({ id: c.id, status: 'completed' });
    let got = (await as(alice).get(`${C}/${c.id}`)).body.data.conversation;
    expect(got).toMatchObject({ status: 'completed', total_turns: 1, total_duration_ms: 4000, avg_response_latency_ms: 700 });
    expect(typeof got.ended_at).toBe('string');
    expect(got).toHaveProperty('summary', null);
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'completed', agent_id: a2 })).status).toBe(400);
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'done' })).status).toBe(400);
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'completed', agent_id: a1 })).status).toBe(200);
    expect((await h.conversations.summarizer.waitFor(c.id, (o) => o.status !== 'skipped')).status).toBe('completed');
    got = (await as(alice).get(`${C}/${c.id}`)).body.data.conversation;
    expect(got.summary).toContain('book a table');
    expect((await as(bob).put(`${C}/${c.id}`, { status: 'failed' })).status).toBe(404);
  });

  it('PUT completed without agent_id has no post-call processing (spec state machine): no summary, QA or analysis job', async () => {
    const jobsFor = async (id: string) =>
      (await infra.sql.unsafe<{ n: number }[]>(`select count(*)::int as n from "${infra.schema}_boss".job where name = 'post-call.summary' and data->>'conversation_id' = $1`, [id]))[0]!.n;
    const quiet = await conversation(alice, a1);
    expect((await as(alice).put(`${C}/${quiet.id}`, { status: 'completed' })).status).toBe(200);
    // An end the outbox does relay (written as the engine or a sweeper would), after it: once the
    // outbox is drained, the PUT's end would have become a job too.
    const relayed = await conversation(alice, a1);
    await infra.sql`update conversations set status = 'completed', ended_at = now() where id = ${relayed.id}`;
    await h.postCall.drain();
    await expect.poll(() => jobsFor(relayed.id), { timeout: 10_000, interval: 100 }).toBe(1);
    expect(await jobsFor(quiet.id)).toBe(0);
  });

  it('a summary asked for (PUT with agent_id) while the completion\'s own job is deciding is still written', async () => {
    const agent = await createAgent(h, infra, alice, alice.workspaceId, 'race');
    const c = await conversation(alice, agent);
    expect((await as(alice).post(`${C}/messages`, { conversation_id: c.id, turn_number: 1, role: 'user', content: 'please move my delivery to Friday' })).status).toBe(201);
    const { entered, release } = holdSummaryJob(agent);
    // The completion (written as the engine would: a PUT without agent_id has no post-call
    // processing) queues the post-call job; it reads summary_status (not asked yet) and waits.
    await infra.sql`update conversations set status = 'completed', ended_at = now() where id = ${c.id}`;
    await entered;
    // Now the explicit request marks the row pending and queues a job behind the running one.
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'completed', agent_id: agent })).status).toBe(200);
    release();
    expect((await h.conversations.summarizer.waitFor(c.id, (o) => o.status === 'skipped')).reason).toMatch(/not asked/);
    const outcome = await summaryAfterSkips(c.id, 'the explicit summary request was lost (the row was marked skipped)');
    expect(outcome.status).toBe('completed');
    expect((await as(alice).get(`${C}/${c.id}`)).body.data.conversation.summary).toContain('Friday');
  }, 30_000);

  it('a second explicit request while the first one\'s job decides to skip is still answered', async () => {
    const agent = await createAgent(h, infra, alice, alice.workspaceId, 'race-2');
    const c = await conversation(alice, agent);
    expect((await as(alice).post(`${C}/messages`, { conversation_id: c.id, turn_number: 1, role: 'user', content: 'cancel my Tuesday appointment' })).status).toBe(201);
    // The first job reads the row (pending), then finds no LLM published: a skip.
    const { entered, release } = holdSummaryJob(agent, { providers: {} });
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'completed', agent_id: agent })).status).toBe(200);
    await entered;
    // The same status again (pending), but a new request: its own job must find the row pending.
    expect((await as(alice).put(`${C}/${c.id}`, { status: 'completed', agent_id: agent })).status).toBe(200);
    release();
    expect((await h.conversations.summarizer.waitFor(c.id, (o) => o.status === 'skipped')).reason).toMatch(/superseded/);
    const outcome = await summaryAfterSkips(c.id, 'the second request was lost (the row was marked skipped)');
    expect(outcome.status).toBe('completed');
    expect((await as(alice).get(`${C}/${c.id}`)).body.data.conversation.summary).toContain('Tuesday');
  }, 30_000);

  it('GET detail, messages and by-session; other workspaces are 404', async () => {
    const c = await conversation(alice, a1);
    const u = await as(alice).post(`${C}/messages`, { conversation_id: c.id, turn_number: 1, role: 'user', content: 'hi', asr_provider: 'sim', asr_latency_ms: 120, asr_confidence: 0.9 });
    const a = await as(alice).post(`${C}/messages`, {
      conversation_id: c.id, turn_number: 1, role: 'assistant', content: 'hello', tool_calls: [{ id: 'tc-1', name: 'lookup' }],
      llm_provider: 'sim', llm_model: 'sim-llm', llm_latency_ms: 300, tokens_input: 10, tokens_output: 3, tts_provider: 'sim', tts_latency_ms: 90,
      total_latency_ms: 560, internal_overhead_ms: 50, metadata: { k: 1 },
    });
    expect(a.status).toBe(201);
    const tc = await as(alice).post(`${C}/tool-calls`, { conversation_id: c.id, message_id: a.body.data.id, tool_name: 'lookup', tool_input: { q: 1 }, tool_output: { r: [1, 2] }, status: 'success', latency_ms: 42 });
    expect(tc.status).toBe(201);
    expect(tc.body.data).toMatchObject({ tool_name: 'lookup', tool_input: { q: 1 }, tool_output: { r: [1, 2] }, status: 'success', latency_ms: 42, message_id: a.body.data.id });

    const d = await as(alice).get(`${C}/${c.id}`);
    expect(Object.keys(d.body.data).sort()).toEqual(['conversation', 'messages', 'tool_calls']);
    expect(d.body.data.messages.map((x: any) => `${x.turn_number}:${x.role}`)).toEqual(['1:user', '1:assistant']);
    expect(d.body.data.messages[0]).toMatchObject({ id: u.body.data.id, asr_provider: 'sim', asr_latency_ms: 120, asr_confidence: 0.9, tool_calls: [] });
    expect(d.body.data.messages[0]).toHaveProperty('audio_url', null);
    expect(d.body.data.messages[1]).toMatchObject({ tool_calls: [{ id: 'tc-1', name: 'lookup' }], total_latency_ms: 560, internal_overhead_ms: 50, metadata: { k: 1 } });
    expect(d.body.data.tool_calls).toHaveLength(1);
    const msgs = await as(alice).get(`${C}/${c.id}/messages`);
    expect(msgs.body.data.map((x: any) => x.id)).toEqual([u.body.data.id, a.body.data.id]);
    expect((await as(alice).get(`${C}/by-session/${encodeURIComponent(c.session_id)}`)).body.data.id).toBe(c.id);

    for (const p of [`${C}/${c.id}`, `${C}/${c.id}/messages`, `${C}/by-session/${encodeURIComponent(c.session_id)}`]) {
      const r = await as(bob).get(p);
      expect(r.status, p).toBe(404);
      expect(r.body.error.code).toBe('NOT_FOUND');
    }
    expect((await as(alice).get(`${C}/${newId()}`)).status).toBe(404);
    expect((await as(alice).get(`${C}/not-a-uuid`)).status).toBe(404);
    expect((await as(bob).post(`${C}/messages`, { conversation_id: c.id, role: 'user', content: 'x' })).status).toBe(404);
    expect((await as(bob).post(`${C}/tool-calls`, { conversation_id: c.id, message_id: a.body.data.id, tool_name: 't' })).status).toBe(404);
    const c2 = await conversation(alice, a1);
    expect((await as(alice).post(`${C}/tool-calls`, { conversation_id: c2.id, message_id: a.body.data.id, tool_name: 't' })).status).toBe(404);
  });

  it('message create is idempotent by client id and validates role', async () => {
    const c = await conversation(alice, a2);
    const id = newId();
    const body = { id, conversation_id: c.id, turn_number: 2, role: 'user', content: 'again' };
    const r1 = await as(alice).post(`${C}/messages`, body);
    const r2 = await as(alice).post(`${C}/messages`, body);
    expect([r1.status, r2.status]).toEqual([201, 201]);
    expect(r2.body.data).toEqual(r1.body.data);
    expect((await as(alice).post(`${C}/messages`, { ...body, content: 'changed' })).status).toBe(409);
    expect((await as(alice).post(`${C}/messages`, { conversation_id: c.id, role: 'system', content: 'x' })).body.error.details[0].field).toBe('role');
  });

  it('PATCH a message: metadata required and non-null (400), merged, conversation_id checked, fenced', async () => {
    const c = await conversation(alice, a1);
    const m = (await as(alice).post(`${C}/messages`, { conversation_id: c.id, role: 'user', content: 'x', metadata: { a: 1 } })).body.data;
    const P = `${C}/messages/${m.id}`;
    expect((await as(alice).patch(P, {})).body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ field: 'metadata' }] });
    expect((await as(alice).patch(P, { metadata: null })).status).toBe(400);
    expect((await as(alice).patch(P, { metadata: 'text' })).status).toBe(400);
    expect((await as(alice).patch(P, undefined, 'not json')).body.error.code).toBe('INVALID_BODY');
    const ok = await as(alice).patch(P, { metadata: { conversation_id: c.id, rating: 5 } });
    expect(ok.body.data).toEqual({ id: m.id, status: 'updated' });
    const after = (await as(alice).get(`${C}/${c.id}/messages`)).body.data[0];
    expect(after.metadata).toEqual({ a: 1, conversation_id: c.id, rating: 5 });
    expect((await as(alice).patch(P, { metadata: { conversation_id: newId() } })).status).toBe(404);
    expect((await as(bob).patch(P, { metadata: { x: 1 } })).status).toBe(404);
    expect((await as(alice).patch(`${C}/messages/${newId()}`, { metadata: { x: 1 } })).status).toBe(404);
  });
});

describe('list, summary, count', () => {
  let ws2Ids: string[] = [];
  beforeAll(async () => {
    for (let i = 0; i < 5; i++) ws2Ids.push((await conversation(alice, a3, { user_id: i % 2 ? 'odd' : 'even' })).id);
    await as(alice).put(`${C}/${ws2Ids[0]}`, { status: 'completed', total_turns: 2, total_duration_ms: 1000, avg_response_latency_ms: 500 });
    await as(alice).put(`${C}/${ws2Ids[1]}`, { status: 'failed', total_turns: 4, total_duration_ms: 3000, avg_response_latency_ms: 800 });
    ws2Ids = ws2Ids.reverse(); // newest first
  });

  it('paginates with meta page/per_page/total/total_pages, newest first', async () => {
    const q = `${C}?workspace_id=${aliceWs2}`;
    const p1 = await as(alice).get(`${q}&limit=2`);
    expect(p1.body.meta).toEqual({ page: 1, per_page: 2, total: 5, total_pages: 3 });
    expect(p1.body.data.map((c: any) => c.id)).toEqual(ws2Ids.slice(0, 2));
    const p3 = await as(alice).get(`${q}&limit=2&offset=4`);
    expect(p3.body.meta).toEqual({ page: 3, per_page: 2, total: 5, total_pages: 3 });
    expect(p3.body.data.map((c: any) => c.id)).toEqual(ws2Ids.slice(4));
    const beyond = await as(alice).get(`${q}&limit=2&offset=10`);
    expect(beyond.body).toMatchObject({ data: [], meta: { page: 6, total: 5 } });
    expect((await as(alice).get(`${q}&limit=500`)).body.meta.per_page).toBe(500);
    expect((await as(alice).get(q)).body.meta).toMatchObject({ per_page: 20, page: 1 });
    for (const bad of ['limit=0', 'limit=501', 'limit=-1', 'offset=-1', 'limit=abc', 'status=done', 'agent_id=xyz', 'workspace_id=xyz']) {
      const r = await as(alice).get(`${q}&${bad}`);
      expect(r.status, bad).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
    }
  });

  it('filters by agent, user and status; defaults to the caller\'s own workspace; fences others', async () => {
    const own = await as(alice).get(`${C}?limit=500`);
    expect(own.body.data.length).toBeGreaterThan(0);
    expect(own.body.data.every((c: any) => c.workspace_id === alice.workspaceId)).toBe(true);
    const byAgent = await as(alice).get(`${C}?agent_id=${a2}&limit=500`);
    expect(byAgent.body.data.length).toBeGreaterThan(0);
    expect(byAgent.body.data.every((c: any) => c.agent_id === a2)).toBe(true);
    const odd = await as(alice).get(`${C}?workspace_id=${aliceWs2}&user_id=odd`);
    expect(odd.body.meta.total).toBe(2);
    const failed = await as(alice).get(`${C}?workspace_id=${aliceWs2}&status=failed`);
    expect(failed.body.data.map((c: any) => c.id)).toEqual([ws2Ids[3]]);
    // Another owner's agent or user id returns nothing; another owner's workspace is 404.
    expect((await as(alice).get(`${C}?agent_id=${bobAgent}`)).body).toMatchObject({ data: [], meta: { total: 0 } });
    expect((await as(alice).get(`${C}?user_id=${bob.userId}`)).body.meta.total).toBe(0);
    expect((await as(alice).get(`${C}?workspace_id=${bob.workspaceId}`)).status).toBe(404);
    expect((await as(bob).get(C)).body.meta.total).toBe(0);
    expect((await api(h, 'GET', C)).status).toBe(401);
  });

  it('summary: workspace_id required (400), counts and turn-weighted latency, fenced', async () => {
    expect((await as(alice).get(`${C}/summary`)).body.error).toMatchObject({ code: 'INVALID_REQUEST', details: [{ field: 'workspace_id' }] });
    const s = await as(alice).get(`${C}/summary?workspace_id=${aliceWs2}`);
    expect(s.body.data).toEqual({ total: 5, active: 3, completed: 1, failed: 1, total_turns: 6, total_duration_ms: 4000, avg_latency_ms: 700 });
    expect((await as(alice).get(`${C}/summary?workspace_id=${aliceWs2}&status=failed`)).body.data).toMatchObject({ total: 1, failed: 1, avg_latency_ms: 800 });
    expect((await as(alice).get(`${C}/summary?workspace_id=${aliceWs2}&agent_id=${a1}`)).body.data.total).toBe(0);
    expect((await as(bob).get(`${C}/summary?workspace_id=${aliceWs2}`)).status).toBe(404);
  });

  it('agent count: {count}; another owner\'s or unknown agent is 404', async () => {
    expect((await as(alice).get(`${C}/agent/${a3}/count`)).body.data).toEqual({ count: 5 });
    expect((await as(bob).get(`${C}/agent/${a3}/count`)).status).toBe(404);
    expect((await as(alice).get(`${C}/agent/${newId()}/count`)).status).toBe(404);
    expect((await as(bob).get(`${C}/agent/${bobAgent}/count`)).body.data).toEqual({ count: 0 });
  });
});

describe('health and other protocols', () => {
  it('health aliases answer without a bearer', async () => {
    for (const p of ['health', 'healthz', 'live', 'ready']) {
      const r = await api(h, 'GET', `${C}/${p}`);
      expect(r.status, p).toBe(200);
      expect(r.body).toMatchObject({ success: true, data: { status: 'ok' } });
    }
  });

  it('gRPC (grpc-js) and Connect reach the same implementation with the same errors', async () => {
    const c = await conversation(alice, a1);
    const g = grpcClient(h.port, 'ConversationService', 'voiceplane/v1/conversations.proto');
    try {
      const got = await g.call<{ conversation: { id: string; status: string } }>('GetConversation', { id: c.id }, alice.token);
      expect(got.conversation).toMatchObject({ id: c.id, status: 'active' });
      await expect(g.call('GetConversation', { id: c.id }, bob.token)).rejects.toMatchObject({ code: 5 });
      await expect(g.call('ListConversations', { limit: 0 }, alice.token)).rejects.toMatchObject({ code: 3 });
    } finally {
      g.close();
    }
    const client = createClient(ConversationService, createConnectTransport({ baseUrl: `http://127.0.0.1:${h.port}`, httpVersion: '2' }));
    const headers = { authorization: `Bearer ${alice.token}` };
    expect((await client.countAgentConversations({ agentId: a1 }, { headers })).count).toBeGreaterThan(0);
    const err = await client.getConversationSummary({}, { headers }).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);
  });
});

describe('call ids across workspaces', () => {
  it("POST refuses another workspace's call_id (it would fold into that tenant's call); its own call's stints share one", async () => {
    const callId = newId();
    await conversation(alice, a1, { call_id: callId });
    await conversation(alice, a2, { call_id: callId, segment_kind: 'human' });
    const foreign = await as(bob).post(C, { session_id: `s-${newId()}`, agent_id: bobAgent, call_id: callId });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error.details[0].field).toBe('call_id');
  });
});

describe('session ids are unique per workspace (migration 0024)', () => {
  it("another workspace's conversation with the same session_id neither blocks nor shows through", async () => {
    const sessionId = `s-${newId()}`;
    // Bob claims the id first: with a global index Alice got 409 for a row she cannot see.
    const bobs = await conversation(bob, bobAgent, { session_id: sessionId });
    const alices = await conversation(alice, a1, { session_id: sessionId });
    expect(alices.workspace_id).toBe(alice.workspaceId);
    const path = `${C}/by-session/${encodeURIComponent(sessionId)}`;
    expect((await as(alice).get(path)).body.data.id).toBe(alices.id);
    expect((await as(bob).get(path)).body.data.id).toBe(bobs.id);
    // Within one workspace the session id is still taken.
    const again = await as(alice).post(C, { session_id: sessionId, agent_id: a2 });
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe('CONFLICT');
  });

  it("by-session for a caller in several workspaces: the own workspace's row first, 404 when none is theirs", async () => {
    const sessionId = `s-${newId()}`;
    // The second workspace's row starts first: the preference, not the age, picks the answer.
    const inWs2 = await conversation(alice, a3, { session_id: sessionId });
    const path = `${C}/by-session/${encodeURIComponent(sessionId)}`;
    expect((await as(alice).get(path)).body.data.id).toBe(inWs2.id);
    const own = await conversation(alice, a1, { session_id: sessionId });
    expect((await as(alice).get(path)).body.data.id).toBe(own.id);
    const none = await as(bob).get(path);
    expect(none.status).toBe(404);
    expect(none.body.error.code).toBe('NOT_FOUND');
  });

  it("a client id taken in another workspace gets the same 409 as one's own id with another body", async () => {
    const id = newId();
    await conversation(alice, a1, { id });
    const foreign = await as(bob).post(C, { id, session_id: `s-${newId()}`, agent_id: bobAgent });
    const ownOtherBody = await as(alice).post(C, { id, session_id: `s-${newId()}`, agent_id: a1 });
    expect(foreign.status).toBe(409);
    expect(ownOtherBody.status).toBe(409);
    expect(foreign.body.error).toEqual(ownOtherBody.body.error);
    expect(foreign.body.error).toMatchObject({ code: 'CONFLICT', message: 'id is already taken' });
    // Bob's attempt left Alice's row as it was.
    expect((await as(alice).get(`${C}/${id}`)).body.data.conversation.agent_id).toBe(a1);
  });
});

describe('status state machine (completed and failed are final)', () => {
  const stored = async (id: string) => (await as(alice).get(`${C}/${id}`)).body.data.conversation as Record<string, any>;

  it('a completed or failed conversation is not reopened nor turned into the other end: 409 naming status; ended_at stays', async () => {
    for (const end of ['completed', 'failed'] as const) {
      const c = await conversation(alice, a1);
      expect((await as(alice).put(`${C}/${c.id}`, { status: 'active' })).status).toBe(200); // active -> active: nothing changes
      expect((await as(alice).put(`${C}/${c.id}`, { status: end, total_turns: 3, total_duration_ms: 9000 })).body.data).toEqual({ id: c.id, status: end });
      const first = await stored(c.id);
      expect(typeof first.ended_at).toBe('string');
      await new Promise((r) => setTimeout(r, 5)); // a rewrite would show as a later ended_at
      for (const next of ['active', end === 'completed' ? 'failed' : 'completed']) {
        const res = await as(alice).put(`${C}/${c.id}`, { status: next, total_duration_ms: 1 });
        expect(res.status, `${end} -> ${next}`).toBe(409);
        expect(res.body.error).toMatchObject({ code: 'CONFLICT', details: [{ field: 'status' }] });
        expect(res.body.error.message).toContain(`from ${end} to ${next}`);
      }
      // The same end again (e.g. to ask for a summary) and fields without a status still answer 200.
      expect((await as(alice).put(`${C}/${c.id}`, { status: end })).status).toBe(200);
      expect((await as(alice).put(`${C}/${c.id}`, { total_turns: 4 })).status).toBe(200);
      const after = await stored(c.id);
      expect(after).toMatchObject({ status: end, ended_at: first.ended_at, total_turns: 4, total_duration_ms: 9000 });
    }
  });
});
