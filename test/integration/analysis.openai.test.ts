/**
 * Issue 16, "Analysis" against the OpenAI-compatible fake (test/fakes/openai.ts): the extraction
 * request offers one function whose parameters are the schema and forces it (`tool_choice`), the
 * stored values are what the fake returned, and an answer that breaks the schema is retried once
 * with its validation errors. The agent's published LLM is an `openai_compatible` provider whose
 * `base_url` is the fake (loopback allowed by OUTBOUND_ALLOW_CIDRS), built by the real factory.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { ControlPlane } from '../../control-plane/app.js';
import { EXTRACT_TOOL } from '../../control-plane/analysis/ask.js';
import type { ConversationWriter } from '../../media-engine/records/writer.js';
import { OpenAiFake } from '../fakes/openai.js';
import { agentOnFake, startPostCallApp, type PostCallApp } from '../helpers/post-call-app.js';
import { api, type TestUser } from '../helpers/accounts.js';
import type { TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const A = '/api/v1/conversations/analysis';
const FIELDS = [
  { name: 'reason', type: 'enum', enum: ['refund', 'delivery', 'other'] },
  { name: 'order_number', type: 'number' },
];

let infra: TestInfra;
let cp: ControlPlane;
let alice: TestUser;
let writer: ConversationWriter;
const fake = new OpenAiFake({
  rules: [
    // The corrective retry (its user message names the errors): a valid answer.
    { match: /answer was invalid/, toolCalls: [{ name: EXTRACT_TOOL, arguments: { reason: 'delivery', order_number: 77 } }] },
    // "broken" calls first get an enum value the schema does not allow and a string for a number.
    { match: /broken/, toolCalls: [{ name: EXTRACT_TOOL, arguments: { reason: 'lost parcel', order_number: 'seventy' } }] },
    { match: /refund/, toolCalls: [{ name: EXTRACT_TOOL, arguments: { reason: 'refund', order_number: 4321 } }] },
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

async function agentWithSchema(): Promise<string> {
  const id = await agentOnFake(h, fake, 'Analysis openai');
  const schema = await api(cp, 'POST', `${A}/schemas`, { token: alice.token, body: { agent_id: id, name: 'Facts', fields: FIELDS } });
  expect(schema.status, JSON.stringify(schema.body)).toBe(201);
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

async function resultOf(conversationId: string): Promise<any> {
  await expect.poll(async () => (await api(cp, 'GET', `${A}/results?conversation_id=${conversationId}`, { token: alice.token })).body.data?.length, { timeout: 15_000, interval: 200 }).toBe(1);
  return (await api(cp, 'GET', `${A}/results?conversation_id=${conversationId}`, { token: alice.token })).body.data[0];
}

const chatRequests = () => fake.requests.filter((r) => r.path === '/v1/chat/completions');

describe('extraction against the OpenAI-compatible fake', () => {
  it('asks with one forced function whose parameters are the schema, and stores what the fake returned', { timeout: 30_000 }, async () => {
    const agent = await agentWithSchema();
    const before = chatRequests().length;
    const id = await engineEndedCall(agent, 'I want a refund for order 4321.');
    const r = await resultOf(id);
    expect(r).toMatchObject({ status: 'complete', values: { reason: 'refund', order_number: 4321 }, model: 'openai_compatible/local-model', attempts: 1 });
    const sent = chatRequests().slice(before);
    expect(sent).toHaveLength(1);
    const body = sent[0]!.body as any;
    expect(body.tool_choice).toEqual({ type: 'function', function: { name: EXTRACT_TOOL } });
    expect(body.parallel_tool_calls).toBe(false);
    expect(body.tools).toHaveLength(1);
    expect(body.tools[0].function).toMatchObject({
      name: EXTRACT_TOOL,
      parameters: {
        type: 'object',
        required: ['reason', 'order_number'],
        additionalProperties: false,
        properties: { reason: { type: ['string', 'null'], enum: ['refund', 'delivery', 'other', null] }, order_number: { type: ['number', 'null'] } },
      },
    });
    expect(JSON.stringify(body.messages)).toContain('Caller: I want a refund for order 4321.');
  });

  it('an answer that breaks the schema is retried once with the validation errors', { timeout: 30_000 }, async () => {
    const agent = await agentWithSchema();
    const before = chatRequests().length;
    const id = await engineEndedCall(agent, 'This order is broken.');
    const r = await resultOf(id);
    expect(r).toMatchObject({ status: 'complete', values: { reason: 'delivery', order_number: 77 }, attempts: 2 });
    const sent = chatRequests().slice(before);
    expect(sent).toHaveLength(2);
    const retry = (sent[1]!.body as any).messages as Array<Record<string, any>>;
    // The model sees its own call, the rejection as the tool result, and the errors by field.
    expect(retry.at(-3)).toMatchObject({ role: 'assistant', tool_calls: [{ function: { name: EXTRACT_TOOL } }] });
    expect(retry.at(-2)).toMatchObject({ role: 'tool' });
    expect(retry.at(-1)!.content).toContain('/reason');
    expect(retry.at(-1)!.content).toContain('/order_number');
  });
});
