/**
 * Issue 16, "QA": rubrics bound to a sim agent; a conversation completed through
 * `PUT /conversations/{id}` (status completed + agent_id) or ended by the engine is scored through
 * the real path: trigger -> outbox -> relay (pending score row + `qa.score` job) -> the agent's
 * published LLM -> `qa_scores`; the score via its routes and in the signed `call.completed` body
 * (local https receiver); a failing LLM stores `failed` and the event says `partial`; a hanging one
 * makes the event ship `timeout` when the 4-minute hold (on the injected clock) ends; a retried
 * job never makes a second score; fencing; bad input names the field.
 *
 * The control plane runs on a clock two hours behind real time (as in webhooks.delivery.test.ts),
 * so jobs scheduled from it are due at once and the hold can be ended by moving it forward.
 */
import { randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { defaultLlmFactory } from '../../control-plane/conversations/summary.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { QaService } from '../../shared/gen/voiceplane/v1/qa_pb.js';
import { newId } from '../../shared/ids.js';
import { createOutboundClient, type OutboundClient } from '../../shared/outbound/index.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createAgent, offsetClock } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const Q = '/api/v1/qa';
/** Published model names that make the QA LLM fail like an outage, or hang until released. */
const BROKEN_MODEL = 'outage';
const HANGING_MODEL = 'hang';

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let bob: TestUser;
let receiver: WebhookReceiver;
let secret: string;
let writer: ConversationWriter;
let outbound: OutboundClient;
const clock = offsetClock();
let brokenCalls = 0;
let hangStarted: () => void = () => {};
let hanging = true;
/** Ends every hanging request with an error (then new requests fail at once). */
const hangRelease = new Set<(err: Error) => void>();
function releaseHangs(): void {
  hanging = false;
  for (const r of hangRelease) r(new Error('provider gone'));
  hangRelease.clear();
}

const CRITERIA = [
  { name: 'Polite greeting', weight: 1, description: 'greets the caller' },
  { name: 'Refund explained', weight: 3 },
];

function fakeLlm(model: string, stream: LlmProvider['stream']): LlmProvider {
  return { label: model, model, capabilities: { tools: true, parallelToolCalls: false }, stream };
}

beforeAll(async () => {
  expect(devTlsTrusted(), 'vitest globalSetup must trust the development certificate').toBe(true);
  clock.advance(-2 * 3600_000);
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  outbound = createOutboundClient({ clock });
  const real = defaultLlmFactory(clock, outbound);
  cp = await startControlPlane(
    { ...infra, clock },
    {
      port: 0,
      host: '127.0.0.1',
      jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'qa.score': { retryDelaySeconds: 1, retryBackoff: false } } },
      postCallSweepMs: 500,
      webhookJitter: () => 0.5,
      qaLlmFor: async (settings) => {
        if (settings.model_name === BROKEN_MODEL) {
          // eslint-disable-next-line require-yield
          return fakeLlm(BROKEN_MODEL, async function* () {
            brokenCalls++;
            throw new Error('provider down: 503 from upstream');
          });
        }
        if (settings.model_name === HANGING_MODEL) {
          // eslint-disable-next-line require-yield
          return fakeLlm(HANGING_MODEL, async function* (req) {
            if (!hanging) throw new Error('provider gone');
            hangStarted();
            await new Promise((_, reject) => {
              hangRelease.add(reject);
              req.signal?.addEventListener('abort', () => reject(req.signal!.reason), { once: true });
            });
          });
        }
        return real(settings);
      },
    },
  );
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  receiver = await startWebhookReceiver();
  const put = await api(cp, 'PUT', '/api/v1/call-center/settings', { token: alice.token, body: { workspace_id: alice.workspaceId, webhook_url: receiver.url } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock, flushMs: 10 });
});

afterAll(async () => {
  releaseHangs();
  await writer?.close();
  await cp?.close();
  await receiver?.close();
  await outbound?.close();
  await infra?.close();
});

async function publishedAgent(name: string, model = '', user = alice): Promise<string> {
  const id = await createAgent(cp as never, infra, user, user.workspaceId, name);
  const prov = await api(cp, 'POST', `/api/v1/agents/${id}/providers`, { token: user.token, body: { provider_type: 'llm', provider_name: 'sim', model_name: model } });
  expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
  const pub = await api(cp, 'POST', `/api/v1/agents/${id}/versions/publish`, { token: user.token });
  expect(pub.status, JSON.stringify(pub.body)).toBeLessThan(300);
  return id;
}

async function createRubric(body: Record<string, unknown> = {}, token = alice.token) {
  return api(cp, 'POST', `${Q}/rubrics`, { token, body: { workspace_id: alice.workspaceId, name: 'Support QA', description: 'basic support', criteria: CRITERIA, pass_threshold: 70, ...body } });
}

async function boundRubric(agentId: string): Promise<string> {
  const r = await createRubric();
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  const b = await api(cp, 'POST', `${Q}/rubrics/${r.body.data.id}/bind/${agentId}`, { token: alice.token });
  expect(b.status, JSON.stringify(b.body)).toBe(200);
  expect(b.body.data).toEqual({ status: 'bound' });
  return r.body.data.id;
}

/** A carrier call recorded through the REST API and completed with `PUT` (status completed + agent_id). */
async function completedByPut(agentId: string, turns: Array<['user' | 'assistant', string]>): Promise<{ id: string; callId: string }> {
  const callId = newId();
  const c = await api(cp, 'POST', '/api/v1/conversations', { token: alice.token, body: { session_id: `qa-${newId()}`, agent_id: agentId, call_id: callId } });
  expect(c.status, JSON.stringify(c.body)).toBe(201);
  const id = c.body.data.id as string;
  for (const [i, [role, content]] of turns.entries()) {
    const m = await api(cp, 'POST', '/api/v1/conversations/messages', { token: alice.token, body: { conversation_id: id, role, content, turn_number: i + 1 } });
    expect(m.status, JSON.stringify(m.body)).toBe(201);
  }
  const put = await api(cp, 'PUT', `/api/v1/conversations/${id}`, { token: alice.token, body: { status: 'completed', agent_id: agentId } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  return { id, callId };
}

async function scoreOf(conversationId: string, token = alice.token) {
  return api(cp, 'GET', `${Q}/scores?conversation_id=${conversationId}`, { token });
}

async function decidedScore(conversationId: string) {
  await expect.poll(async () => (await scoreOf(conversationId)).body.data?.length, { timeout: 20_000, interval: 200 }).toBe(1);
  return (await scoreOf(conversationId)).body.data[0];
}

async function eventFor(callId: string) {
  await expect.poll(() => receiver.requests.some((r) => r.json?.data?.call_id === callId), { timeout: 20_000, interval: 100 }).toBe(true);
  const got = receiver.requests.find((r) => r.json?.data?.call_id === callId)!;
  expect(verifySignature(secret, got)).toBe(true);
  return got.json;
}

function expectInvalid(res: { status: number; body: any }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('INVALID_REQUEST');
  expect(res.body.error.details[0].field).toBe(field);
}

const TURNS: Array<['user' | 'assistant', string]> = [
  ['user', 'Hi, I want a refund for order 12.'],
  ['assistant', 'Good morning! A polite greeting to you.'],
  ['assistant', 'Your refund is on its way.'],
];

describe('scoring on completion (sim LLM)', () => {
  it('PUT completed + agent_id: the score appears via the routes and in call.completed (complete)', { timeout: 40_000 }, async () => {
    const agent = await publishedAgent('QA sim');
    await boundRubric(agent);
    // An analysis schema too: `complete` needs the summary, the QA score and the analysis result.
    const schema = await api(cp, 'POST', '/api/v1/conversations/analysis/schemas', { token: alice.token, body: { agent_id: agent, name: 'Facts', fields: [{ name: 'refund_requested', type: 'boolean' }] } });
    expect(schema.status, JSON.stringify(schema.body)).toBe(201);
    const { id, callId } = await completedByPut(agent, TURNS);

    const s = await decidedScore(id);
    // Sim rules (shared/providers/llm/sim-qa.ts): "polite" and "greeting" said -> 100; "refund" said,
    // "explained" not -> 50; overall (1*100 + 3*50) / 4 = 62.5 < 70 -> flagged.
    expect(s).toMatchObject({ conversation_id: id, agent_id: agent, rubric_name: 'Support QA', pass_threshold: 70, status: 'scored', overall_score: 62.5, flagged: true, compliance_issue: false, model: 'sim/sim-1', attempts: 1 });
    expect(s.criteria).toEqual([
      { name: 'Polite greeting', weight: 1, score: 100, justification: 'the agent said "polite", "greeting"', quote: 'Agent: Good morning! A polite greeting to you.' },
      { name: 'Refund explained', weight: 3, score: 50, justification: 'the agent said "refund"; the agent never said "explained"', quote: 'Agent: Your refund is on its way.' },
    ]);

    const ev = await eventFor(callId);
    expect(ev.data).toMatchObject({ conversation_id: id, status: 'completed', qa_score: { overall_score: 62.5, flagged: true, status: 'scored' }, analysis_status: 'complete' });
    expect(ev.data.summary).toBeTruthy();

    // A retried (or duplicated) job changes nothing: one score, untouched.
    const again = await cp.jobs.enqueue('qa.score', { conversation_id: id }, { singletonKey: `${id}:again` });
    await expect.poll(async () => (await cp.jobs.state('qa.score', again!))?.state, { timeout: 10_000, interval: 100 }).toBe('completed');
    const after = await scoreOf(id);
    expect(after.body.meta.total).toBe(1);
    expect(after.body.data[0]).toEqual(s);
    const [{ n }] = await infra.sql`select count(*)::int as n from qa_scores where conversation_id = ${id}`;
    expect(n).toBe(1);

    // Review: status reviewed, the model's scores kept alongside.
    const rev = await api(cp, 'POST', `${Q}/scores/${s.id}/review`, { token: alice.token, body: { reviewer_id: alice.userId, notes: 'greeting fine, refund terms missing' } });
    expect(rev.status, JSON.stringify(rev.body)).toBe(200);
    expect(rev.body.data).toEqual({ status: 'reviewed' });
    const reviewed = (await scoreOf(id)).body.data[0];
    expect(reviewed).toMatchObject({ status: 'reviewed', reviewer_id: alice.userId, review_notes: 'greeting fine, refund terms missing', overall_score: 62.5, flagged: true, criteria: s.criteria });
    expect(reviewed.reviewed_at).toBeTruthy();

    // Cohort with pagination meta.
    const second = await completedByPut(agent, [['user', 'hello'], ['assistant', 'A polite greeting, how can I help?']]);
    expect((await decidedScore(second.id)).overall_score).toBe(25); // (1*100 + 3*0) / 4
    const cohort = await api(cp, 'GET', `${Q}/scores?workspace_id=${alice.workspaceId}&agent_id=${agent}&limit=1`, { token: alice.token });
    expect(cohort.status, JSON.stringify(cohort.body)).toBe(200);
    expect(cohort.body.meta).toEqual({ page: 1, per_page: 1, total: 2, total_pages: 2 });
    expect(cohort.body.data).toHaveLength(1);
  });

  it('an unbound agent gets no score; its event says partial: the summary alone (the spec: complete needs both)', { timeout: 30_000 }, async () => {
    const agent = await publishedAgent('QA none');
    const { id, callId } = await completedByPut(agent, TURNS);
    const ev = await eventFor(callId);
    expect(ev.data).toMatchObject({ qa_score: null, analysis_status: 'partial' });
    expect(ev.data.summary).toBeTruthy();
    expect((await scoreOf(id)).body.data).toEqual([]);
  });
});

describe('failing LLM', () => {
  it('the outage is retried, then the score is failed and the event says partial', { timeout: 40_000 }, async () => {
    const agent = await publishedAgent('QA outage', BROKEN_MODEL);
    await boundRubric(agent);
    const before = brokenCalls;
    const { id, callId } = await completedByPut(agent, TURNS);
    const s = await decidedScore(id);
    expect(s).toMatchObject({ status: 'failed', flagged: false, criteria: [], model: `sim/${BROKEN_MODEL}` });
    expect(s.overall_score).toBeUndefined();
    expect(s.error).toContain('provider down');
    // 1 attempt + 2 retries (QUEUE_SETTINGS['qa.score'].retryLimit)
    expect(brokenCalls - before).toBe(3);
    const ev = await eventFor(callId);
    // The summary (sim) arrived, the QA score did not.
    expect(ev.data).toMatchObject({ qa_score: null, analysis_status: 'partial' });
    expect(ev.data.summary).toBeTruthy();
    // A failed score has nothing to review.
    expect((await api(cp, 'POST', `${Q}/scores/${s.id}/review`, { token: alice.token, body: { reviewer_id: 'r1' } })).status).toBe(409);
  });
});

describe('rubrics: routes, validation, roles, fencing', () => {
  let agent: string;
  let rubricId: string;
  beforeAll(async () => {
    agent = await createAgent(cp as never, infra, alice, alice.workspaceId, 'QA fenced');
    const r = await createRubric();
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    rubricId = r.body.data.id;
  });

  it('create, list, update, bind (one active per agent), agent rubric, unbind, delete', async () => {
    const created = (await api(cp, 'GET', `${Q}/rubrics?workspace_id=${alice.workspaceId}`, { token: alice.token })).body.data.find((r: any) => r.id === rubricId);
    expect(created).toMatchObject({ workspace_id: alice.workspaceId, name: 'Support QA', description: 'basic support', pass_threshold: 70, criteria: CRITERIA, agent_ids: [] });
    expect(created.created_at).toBeTruthy();
    const none = await api(cp, 'GET', `${Q}/agent/${agent}/rubric`, { token: alice.token });
    expect(none.status).toBe(200);
    expect(none.body.data).toBeNull();

    const put = await api(cp, 'PUT', `${Q}/rubrics/${rubricId}`, { token: alice.token, body: { pass_threshold: 80, criteria: [{ name: 'Empathy', weight: 2 }] } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    expect(put.body.data).toMatchObject({ name: 'Support QA', pass_threshold: 80, criteria: [{ name: 'Empathy', weight: 2 }] });

    expect((await api(cp, 'POST', `${Q}/rubrics/${rubricId}/bind/${agent}`, { token: alice.token })).body.data).toEqual({ status: 'bound' });
    expect((await api(cp, 'GET', `${Q}/agent/${agent}/rubric`, { token: alice.token })).body.data).toMatchObject({ id: rubricId, agent_ids: [agent] });
    // Binding another rubric replaces the active one.
    const other = (await createRubric({ name: 'Other' })).body.data.id;
    expect((await api(cp, 'POST', `${Q}/rubrics/${other}/bind/${agent}`, { token: alice.token })).status).toBe(200);
    expect((await api(cp, 'GET', `${Q}/agent/${agent}/rubric`, { token: alice.token })).body.data.id).toBe(other);
    expect((await api(cp, 'DELETE', `${Q}/rubrics/${rubricId}/bind/${agent}`, { token: alice.token })).status).toBe(404);
    expect((await api(cp, 'DELETE', `${Q}/rubrics/${other}/bind/${agent}`, { token: alice.token })).body.data).toEqual({ status: 'unbound' });
    expect((await api(cp, 'GET', `${Q}/agent/${agent}/rubric`, { token: alice.token })).body.data).toBeNull();

    expect((await api(cp, 'DELETE', `${Q}/rubrics/${other}`, { token: alice.token })).body.data).toEqual({ status: 'deleted' });
    expect((await api(cp, 'DELETE', `${Q}/rubrics/${other}`, { token: alice.token })).status).toBe(404);
  });

  it('a client-chosen id makes a retried create safe: the same body answers the same rubric, another body is 409', async () => {
    const id = newId();
    const first = await createRubric({ id, name: 'Retried' });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data.id).toBe(id);
    const again = await createRubric({ id, name: 'Retried' });
    expect(again.body.data).toEqual(first.body.data);
    const other = await createRubric({ id, name: 'Another body' });
    expect(other.status).toBe(409);
    expect((await createRubric({ id: 'not-a-uuid' })).body.error.details[0].field).toBe('id');
    const listed = (await api(cp, 'GET', `${Q}/rubrics?workspace_id=${alice.workspaceId}`, { token: alice.token })).body.data.filter((r: any) => r.id === id);
    expect(listed).toHaveLength(1);
    await api(cp, 'DELETE', `${Q}/rubrics/${id}`, { token: alice.token });
  });

  it('bad input is 400 naming the field', async () => {
    expectInvalid(await createRubric({ criteria: [] }), 'criteria');
    expectInvalid(await createRubric({ criteria: 'x' }), 'criteria');
    expectInvalid(await createRubric({ criteria: Array.from({ length: 21 }, (_, i) => ({ name: `c${i}`, weight: 1 })) }), 'criteria');
    expectInvalid(await createRubric({ criteria: [{ name: 'a', weight: 0 }] }), 'criteria[0].weight');
    expectInvalid(await createRubric({ criteria: [{ name: 'a', weight: 1 }, { name: ' ', weight: 1 }] }), 'criteria[1].name');
    expectInvalid(await createRubric({ criteria: [{ name: 'a', weight: 1 }, { name: 'A', weight: 1 }] }), 'criteria[1].name');
    expectInvalid(await createRubric({ pass_threshold: 101 }), 'pass_threshold');
    expectInvalid(await createRubric({ pass_threshold: -1 }), 'pass_threshold');
    expectInvalid(await createRubric({ pass_threshold: undefined }), 'pass_threshold');
    expectInvalid(await createRubric({ pass_threshold: 'high' }), 'pass_threshold');
    expectInvalid(await createRubric({ criteria: undefined }), 'criteria');
    expectInvalid(await createRubric({ name: '' }), 'name');
    expectInvalid(await createRubric({ workspace_id: 'nope' }), 'workspace_id');
    expectInvalid(await api(cp, 'PUT', `${Q}/rubrics/${rubricId}`, { token: alice.token, body: { criteria: [{ name: 'x', weight: -2 }] } }), 'criteria[0].weight');
    expectInvalid(await api(cp, 'GET', `${Q}/rubrics`, { token: alice.token }), 'workspace_id');
    expectInvalid(await api(cp, 'GET', `${Q}/scores`, { token: alice.token }), 'conversation_id');
    expectInvalid(await api(cp, 'GET', `${Q}/scores?workspace_id=${alice.workspaceId}&agent_id=x`, { token: alice.token }), 'agent_id');
    expectInvalid(await api(cp, 'GET', `${Q}/scores?workspace_id=${alice.workspaceId}&limit=0`, { token: alice.token }), 'limit');
    expectInvalid(await api(cp, 'GET', `${Q}/scores`, { token: alice.token }), 'conversation_id');
    expectInvalid(await api(cp, 'GET', `${Q}/scores?agent_id=${randomUUID()}`, { token: alice.token }), 'workspace_id');
  });

  it('other workspaces get 404 on every route by id, 403 where the request names the workspace; cohort filters cannot reach other owners\' agents; a member reads but may not write', { timeout: 30_000 }, async () => {
    const scored = await publishedAgent('QA fenced scored');
    await boundRubric(scored);
    const { id } = await completedByPut(scored, TURNS);
    const score = await decidedScore(id);
    const bobAgent = await createAgent(cp as never, infra, bob, bob.workspaceId, 'Bob agent');
    // A workspace the request names, of another organization: 403 FORBIDDEN (spec doc 3's error table).
    for (const [method, path, body] of [
      ['GET', `${Q}/rubrics?workspace_id=${alice.workspaceId}`],
      ['POST', `${Q}/rubrics`, { workspace_id: alice.workspaceId, name: 'x', criteria: CRITERIA, pass_threshold: 1 }],
      ['GET', `${Q}/scores?workspace_id=${alice.workspaceId}&agent_id=${scored}`],
    ] as const) {
      const res = await api(cp, method, path, { token: bob.token, body });
      expect([method, path, res.status, res.body.error?.code]).toEqual([method, path, 403, 'FORBIDDEN']);
    }
    for (const [method, path, body] of [
      ['PUT', `${Q}/rubrics/${rubricId}`, { name: 'stolen' }],
      ['DELETE', `${Q}/rubrics/${rubricId}`],
      ['POST', `${Q}/rubrics/${rubricId}/bind/${agent}`],
      ['POST', `${Q}/rubrics/${rubricId}/bind/${bobAgent}`],
      ['DELETE', `${Q}/rubrics/${rubricId}/bind/${agent}`],
      ['GET', `${Q}/agent/${scored}/rubric`],
      ['GET', `${Q}/scores?conversation_id=${id}`],
      // Bob's own workspace with Alice's agent: the filter cannot reach it.
      ['GET', `${Q}/scores?workspace_id=${bob.workspaceId}&agent_id=${scored}`],
      ['POST', `${Q}/scores/${score.id}/review`, { reviewer_id: 'bob' }],
    ] as const) {
      const res = await api(cp, method, path, { token: bob.token, body });
      expect(res.status, `${method} ${path} ${JSON.stringify(res.body)}`).toBe(404);
    }
    // A foreign id answers exactly as an unknown one: never "workspace not found".
    const unknown = '0190a0a0-0000-7000-8000-00000000beef';
    for (const [foreignPath, unknownPath] of [
      [`${Q}/rubrics/${rubricId}`, `${Q}/rubrics/${unknown}`],
      [`${Q}/agent/${scored}/rubric`, `${Q}/agent/${unknown}/rubric`],
    ] as const) {
      const method = foreignPath.endsWith('/rubric') ? 'GET' : 'DELETE';
      const foreign = await api(cp, method, foreignPath, { token: bob.token });
      const missing = await api(cp, method, unknownPath, { token: bob.token });
      expect(JSON.stringify(foreign.body).replace(/"timestamp":"[^"]*"/, ''), foreignPath).toBe(JSON.stringify(missing.body).replace(/"timestamp":"[^"]*"/, ''));
    }
    // Alice cannot bind her rubric to Bob's agent either.
    expect((await api(cp, 'POST', `${Q}/rubrics/${rubricId}/bind/${bobAgent}`, { token: alice.token })).status).toBe(404);
    // Bob's own cohort is empty, not Alice's.
    const own = await api(cp, 'GET', `${Q}/scores?workspace_id=${bob.workspaceId}`, { token: bob.token });
    expect(own.body).toMatchObject({ data: [], meta: { total: 0 } });

    const add = await api(cp, 'POST', `/api/v1/auth/workspaces/${alice.workspaceId}/members`, { token: alice.token, body: { email: bob.email, role: 'member' } });
    expect(add.status, JSON.stringify(add.body)).toBe(201);
    expect((await api(cp, 'GET', `${Q}/rubrics?workspace_id=${alice.workspaceId}`, { token: bob.token })).status).toBe(200);
    expect((await api(cp, 'GET', `${Q}/scores?conversation_id=${id}`, { token: bob.token })).body.data[0].id).toBe(score.id);
    expect((await api(cp, 'PUT', `${Q}/rubrics/${rubricId}`, { token: bob.token, body: { name: 'x' } })).status).toBe(403);
    expect((await api(cp, 'POST', `${Q}/scores/${score.id}/review`, { token: bob.token, body: { reviewer_id: 'bob' } })).status).toBe(403);
    expect((await createRubric({}, bob.token)).status).toBe(403);
  });

  it('the same service over Connect', async () => {
    const client = createClient(QaService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    const res = await client.listQaRubrics({ workspaceId: alice.workspaceId }, { headers: { authorization: `Bearer ${alice.token}` } });
    expect(res.rubrics.map((r) => r.id)).toContain(rubricId);
  });
});

// Last: it moves the control plane's clock forward past the hold.
describe('the hold ends before the score', () => {
  it('an engine-ended call whose scoring hangs ships timeout after 4 minutes (injected clock)', { timeout: 40_000 }, async () => {
    const agent = await publishedAgent('QA hang', HANGING_MODEL);
    await boundRubric(agent);
    const started = new Promise<void>((resolve) => (hangStarted = resolve));
    const callId = newId();
    const sc = sessionConfig({ agent_id: agent, workspace_id: alice.workspaceId });
    const rec = writer.recorderFor(sc);
    const t0 = clock.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: alice.workspaceId, call_id: callId, metadata: {}, started_at_ms: t0 });
    rec.turn({ ...turnRecord(1, { startedAtMs: t0 + 1000 }), user_text: 'I want a refund.', assistant_text: 'A polite greeting; your refund is coming.' });
    rec.end(endRecord(1, t0));
    await writer.flush();
    await started;
    const [row] = await infra.sql`select status from qa_scores where conversation_id = ${rec.conversationId}`;
    expect(row.status).toBe('pending');
    // Held: nothing for this call while the score is pending (the job re-checks every 5 s).
    expect(receiver.requests.some((r) => r.json?.data?.call_id === callId)).toBe(false);
    clock.advance(4 * 60_000 + 1000);
    const ev = await eventFor(callId);
    // No summary configured for this agent, and the QA score never arrived.
    expect(ev.data).toMatchObject({ conversation_id: rec.conversationId, qa_score: null, analysis_status: 'timeout' });
    expect((await scoreOf(rec.conversationId)).body.data).toEqual([]);
    // The provider then fails for good: the score ends failed; the event was already sent, once.
    releaseHangs();
    expect((await decidedScore(rec.conversationId)).status).toBe('failed');
    expect(receiver.requests.filter((r) => r.json?.data?.call_id === callId)).toHaveLength(1);
  });
});
