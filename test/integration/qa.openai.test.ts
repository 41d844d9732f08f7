/**
 * Issue 16, "QA" against the OpenAI-compatible fake (test/fakes/openai.ts), on calls the engine
 * ended itself: the scoring request forces one function whose parameters are the rubric's JSON
 * Schema, the stored score is what the fake returned (weighted mean, flagged on a reported
 * compliance problem despite a passing score), and an answer whose quote is not in the transcript
 * is retried once with that problem. The agent's published LLM is an `openai_compatible` provider
 * whose `base_url` is the fake (loopback allowed by OUTBOUND_ALLOW_CIDRS), built by the real factory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../control-plane/app.js';
import { QA_TOOL } from '../../control-plane/qa/criteria.js';
import type { ConversationWriter } from '../../media-engine/records/writer.js';
import { OpenAiFake } from '../fakes/openai.js';
import { agentOnFake, startPostCallApp, type PostCallApp } from '../helpers/post-call-app.js';
import { api, type TestUser } from '../helpers/accounts.js';
import type { TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const Q = '/api/v1/qa';
const CRITERIA = [
  { name: 'Greeting', weight: 1 },
  { name: 'Resolution', weight: 3 },
];
const QUOTE = 'Agent: Let me check.';
const good = (greeting: number, resolution: number, compliance: string | null) => ({
  criteria: [
    { name: 'Greeting', score: greeting, justification: 'greets', quote: QUOTE },
    { name: 'Resolution', score: resolution, justification: 'checks the order', quote: QUOTE },
  ],
  compliance_issue: compliance !== null,
  compliance_note: compliance,
});

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let writer: ConversationWriter;
const fake = new OpenAiFake({
  rules: [
    // The corrective retry (its user message names the problems): a valid answer.
    { match: /answer was invalid/, toolCalls: [{ name: QA_TOOL, arguments: good(60, 40, null) }] },
    // "invented" calls first get a quote that is not in the transcript.
    { match: /invented/, toolCalls: [{ name: QA_TOOL, arguments: { ...good(60, 40, null), criteria: [good(60, 40, null).criteria[0], { name: 'Resolution', score: 40, justification: 'x', quote: 'Agent: I never said this.' }] } }] },
    { match: /refund/, toolCalls: [{ name: QA_TOOL, arguments: good(90, 80, 'promised a guaranteed refund') }] },
  ],
});

let h: PostCallApp;

beforeAll(async () => {
  await fake.start();
  h = await startPostCallApp();
  ({ infra, cp, alice, writer } = h);
});

afterAll(async () => {
  await h?.close();
  await fake.close();
});

async function agentWithRubric(): Promise<string> {
  const id = await agentOnFake(h, fake, 'QA openai');
  const r = await api(cp, 'POST', `${Q}/rubrics`, { token: alice.token, body: { workspace_id: alice.workspaceId, name: 'Basics', criteria: CRITERIA, pass_threshold: 70 } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  expect((await api(cp, 'POST', `${Q}/rubrics/${r.body.data.id}/bind/${id}`, { token: alice.token })).status).toBe(200);
  return id;
}

async function engineEndedCall(agentId: string, userText: string): Promise<string> {
  const sc = sessionConfig({ agent_id: agentId, workspace_id: alice.workspaceId });
  const rec = writer.recorderFor(sc);
  const t0 = Date.now();
  rec.start({ session_id: sc.session_id, agent_id: agentId, workspace_id: alice.workspaceId, user_id: 'caller-1', metadata: {}, started_at_ms: t0 });
  rec.turn({ ...turnRecord(1, { startedAtMs: t0 + 1000 }), user_text: userText, assistant_text: 'Let me check.' });
  rec.end(endRecord(1, t0));
  await writer.flush();
  return rec.conversationId;
}

async function scoreOf(conversationId: string): Promise<any> {
  const get = () => api(cp, 'GET', `${Q}/scores?conversation_id=${conversationId}`, { token: alice.token });
  await expect.poll(async () => (await get()).body.data?.length, { timeout: 15_000, interval: 200 }).toBe(1);
  return (await get()).body.data[0];
}

const chatRequests = () => fake.requests.filter((r) => r.path === '/v1/chat/completions');

describe('QA scoring against the OpenAI-compatible fake', () => {
  it('forces one function with the rubric schema and stores what the fake returned', { timeout: 30_000 }, async () => {
    const agent = await agentWithRubric();
    const before = chatRequests().length;
    const id = await engineEndedCall(agent, 'I want a refund for order 4321.');
    const s = await scoreOf(id);
    // (1*90 + 3*80) / 4 = 82.5 passes 70, but the reported compliance problem flags it.
    expect(s).toMatchObject({ status: 'scored', overall_score: 82.5, flagged: true, compliance_issue: true, compliance_note: 'promised a guaranteed refund', model: 'openai_compatible/local-model', attempts: 1 });
    expect(s.criteria).toEqual([
      { name: 'Greeting', weight: 1, score: 90, justification: 'greets', quote: QUOTE },
      { name: 'Resolution', weight: 3, score: 80, justification: 'checks the order', quote: QUOTE },
    ]);
    const sent = chatRequests().slice(before);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as any;
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: QA_TOOL } });
    expect(body.tools).toHaveLength(1);
    expect(body.tools[0].function.parameters).toMatchObject({
      type: 'object',
      required: ['criteria', 'compliance_issue', 'compliance_note'],
      properties: { criteria: { type: 'array', minItems: 2, maxItems: 2, items: { properties: { name: { enum: ['Greeting', 'Resolution'] }, score: { minimum: 0, maximum: 100 } } } } },
    });
    // The rubric (names, weights) is in the system prompt, the transcript in the user message.
    expect(body.messages[0].content).toContain('- Resolution (weight 3)');
    expect(JSON.stringify(body.messages)).toContain('Caller: I want a refund for order 4321.');
  });

  it('a quote that is not in the transcript is retried once with that problem', { timeout: 30_000 }, async () => {
    const agent = await agentWithRubric();
    const before = chatRequests().length;
    const id = await engineEndedCall(agent, 'Some invented complaint.');
    const s = await scoreOf(id);
    expect(s).toMatchObject({ status: 'scored', overall_score: 45, flagged: true, compliance_issue: false, attempts: 2 }); // (60 + 3*40) / 4
    const sent = chatRequests().slice(before);
    expect(sent).toHaveLength(2);
    const retry = (sent[1]!.body as any).messages as Array<Record<string, any>>;
    expect(retry.at(-3)).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: QA_TOOL } }] });
    expect(retry.at(-1)!.content).toContain('/criteria/1/quote is not text of the transcript');
  });
});
