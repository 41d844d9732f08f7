/**
 * Issue 16, "Done means", through a real engine call: a carrier call placed by the carrier
 * simulator, answered by the engine (sim ASR/LLM/TTS), hung up by the caller. The records the
 * engine's writer leaves start the post-call pipeline (outbox -> relay -> jobs); the analysis
 * result and the QA score appear via their routes and in the signed `call.completed` body. With
 * the post-call LLM down, both are stored `failed` and the event says `partial` (the summary, made
 * by another path, still arrived).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defaultLlmFactory, type LlmFactory } from '../../control-plane/conversations/summary.js';
import { createOutboundClient, type OutboundClient } from '../../shared/outbound/index.js';
import { realClock } from '../../shared/clock.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { completedConversation, inboundCallOnce } from '../helpers/carrier-calls.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const NUMBER = '+14155550131';
const CALLER = '+14155550139';

let h: TelephonyHarness;
let receiver: WebhookReceiver;
let outbound: OutboundClient;
let secret = '';
let agentId = '';
let schemaId = '';
/** While true, the analysis and QA LLM fails like an outage (every attempt). */
let outage = false;
let failedAsks = 0;

const postCallLlm: LlmFactory = async (settings) => {
  if (!outage) return defaultLlmFactory(realClock, outbound)(settings);
  return {
    label: 'outage',
    model: 'outage',
    capabilities: { tools: true, parallelToolCalls: false },
    // eslint-disable-next-line require-yield
    async *stream() {
      failedAsks++;
      throw new Error('provider down: 503 from upstream');
    },
  };
};

beforeAll(async () => {
  expect(devTlsTrusted(), 'vitest globalSetup must trust the development certificate').toBe(true);
  outbound = createOutboundClient({ clock: realClock });
  h = await startTelephonyHarness({
    env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' },
    app: {
      jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'qa.score': { retryDelaySeconds: 1, retryBackoff: false }, 'analysis.extract': { retryDelaySeconds: 1, retryBackoff: false } } },
      postCallSweepMs: 500,
      webhookJitter: () => 0.5,
      analysisLlmFor: postCallLlm,
      qaLlmFor: postCallLlm,
    },
  });
  receiver = await startWebhookReceiver();
  const put = await h.call('PUT', '/call-center/settings', { workspace_id: h.user.workspaceId, webhook_url: receiver.url });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;

  agentId = await h.createAgent({ number: NUMBER, direction: 'inbound', welcome: 'hello caller' });
  // A summary too (its own job and LLM path): the third piece `analysis_status` waits for.
  const tel = await h.call('PUT', `/agents/${agentId}/telephony`, {
    carrier_phone_number: NUMBER,
    call_direction: 'inbound',
    carrier_account_sid: h.accountSid,
    carrier_auth_token: h.authToken,
    generate_call_summary: true,
  });
  expect(tel.status, JSON.stringify(tel.body)).toBe(200);
  expect((await h.call('POST', `/agents/${agentId}/versions/publish`)).status).toBeLessThan(300);
  const rubric = await h.call('POST', '/qa/rubrics', {
    workspace_id: h.user.workspaceId,
    name: 'Support QA',
    criteria: [
      { name: 'Polite greeting', weight: 1 },
      { name: 'Refund explained', weight: 3 },
    ],
    pass_threshold: 70,
  });
  expect(rubric.status, JSON.stringify(rubric.body)).toBe(201);
  const bind = await h.call('POST', `/qa/rubrics/${rubric.body.data.id}/bind/${agentId}`);
  expect(bind.status, JSON.stringify(bind.body)).toBe(200);
  const schema = await h.call('POST', '/conversations/analysis/schemas', { agent_id: agentId, name: 'Facts', fields: [{ name: 'refund_requested', type: 'boolean' }] });
  expect(schema.status, JSON.stringify(schema.body)).toBe(201);
  schemaId = schema.body.data.id;
}, 60_000);

afterAll(async () => {
  await h?.close();
  await receiver?.close();
  await outbound?.close();
});

const callOnce = (words: string) => inboundCallOnce(h, { to: NUMBER, from: CALLER, welcome: 'hello caller', words, callerName: 'Ada Tester' });
const conversationOf = (sessionId: string) => completedConversation(h, sessionId);

async function eventFor(callId: string) {
  await expect.poll(() => receiver.requests.some((r) => r.json?.data?.call_id === callId), { timeout: 30_000, interval: 100 }).toBe(true);
  const got = receiver.requests.find((r) => r.json?.data?.call_id === callId)!;
  expect(verifySignature(secret, got)).toBe(true);
  return got.json;
}

describe('post-call pipeline after a real engine call', () => {
  it('analysis result and QA score via their routes and in call.completed', { timeout: 90_000 }, async () => {
    const { callId, sessionId } = await callOnce('hello, I want a refund please');
    const conversationId = await conversationOf(sessionId);

    const ev = await eventFor(callId);
    expect(ev.data).toMatchObject({ conversation_id: conversationId, status: 'completed', analysis_status: 'complete' });
    // The voice webhook's CallerName is the event's caller_name.
    expect(ev.data.caller_name).toBe('Ada Tester');
    // The record names the carrier (connection_type: its media stream's protocol).
    const conv = (await h.call('GET', `/conversations/${conversationId}`)).body.data;
    expect((conv.conversation ?? conv).metadata).toMatchObject({ connection_type: 'twilio', telephony_provider: 'twilio', call_direction: 'inbound' });
    expect(ev.data.summary).toBeTruthy();
    expect(ev.data.qa_score).toMatchObject({ status: 'scored' });
    expect(typeof ev.data.qa_score.overall_score).toBe('number');

    const scores = await h.call('GET', `/qa/scores?conversation_id=${conversationId}`);
    expect(scores.status, JSON.stringify(scores.body)).toBe(200);
    expect(scores.body.data).toHaveLength(1);
    expect(scores.body.data[0]).toMatchObject({ conversation_id: conversationId, agent_id: agentId, status: 'scored', overall_score: ev.data.qa_score.overall_score });

    const results = await h.call('GET', `/conversations/analysis/results?conversation_id=${conversationId}`);
    expect(results.status, JSON.stringify(results.body)).toBe(200);
    expect(results.body.data).toHaveLength(1);
    expect(results.body.data[0]).toMatchObject({ conversation_id: conversationId, schema_id: schemaId, status: 'complete' });
    expect(typeof results.body.data[0].values.refund_requested).toBe('boolean');
  });

  it('with the post-call LLM down both are stored failed and the event says partial', { timeout: 90_000 }, async () => {
    outage = true;
    try {
      const { callId, sessionId } = await callOnce('hello again');
      const conversationId = await conversationOf(sessionId);
      const ev = await eventFor(callId);
      expect(ev.data).toMatchObject({ conversation_id: conversationId, qa_score: null, analysis_status: 'partial' });
      expect(ev.data.summary).toBeTruthy();
      expect(failedAsks).toBeGreaterThanOrEqual(2);

      const score = (await h.call('GET', `/qa/scores?conversation_id=${conversationId}`)).body.data;
      expect(score).toHaveLength(1);
      expect(score[0]).toMatchObject({ status: 'failed' });
      expect(score[0].error).toContain('provider down');
      const result = (await h.call('GET', `/conversations/analysis/results?conversation_id=${conversationId}`)).body.data;
      expect(result).toHaveLength(1);
      expect(result[0]).toMatchObject({ status: 'failed' });
      expect(result[0].error).toContain('provider down');
    } finally {
      outage = false;
    }
  });
});
