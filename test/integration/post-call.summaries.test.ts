/**
 * Issue 14, "Summaries": every completed call gets a summary when the agent's published version
 * asks for one (`generate_call_summary`), including calls the engine ended itself (rows written
 * by the engine's record writer, not through the API). The path under test is the real one:
 * writer -> `conversations` -> trigger -> `post_call_events` -> relay -> pg-boss job -> the
 * agent's published LLM -> `conversations.summary`.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { defaultLlmFactory } from '../../control-plane/conversations/summary.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import { createOutboundClient, type OutboundClient } from '../../shared/outbound/index.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent, startConversationsServer, type Harness } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

let infra: TestInfra;
let h: Harness;
let alice: TestUser;
let writer: ConversationWriter;
let outbound: OutboundClient;
/** Attempts the failing provider saw. */
let brokenCalls = 0;

/** The published model name that makes the summary LLM fail like a provider outage. */
const BROKEN_MODEL = 'outage';

beforeAll(async () => {
  infra = await startTestInfra();
  outbound = createOutboundClient({ clock: infra.clock });
  const real = defaultLlmFactory(infra.clock, outbound);
  h = await startConversationsServer(infra, {
    llmFor: async (settings) => {
      if (settings.model_name !== BROKEN_MODEL) return real(settings);
      const failing: LlmProvider = {
        label: 'outage',
        // eslint-disable-next-line require-yield
        async *stream() {
          brokenCalls++;
          throw new Error('provider down: 503 from upstream');
        },
      } as unknown as LlmProvider;
      return failing;
    },
  });
  alice = await createTestUser(h);
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
});

afterAll(async () => {
  await writer?.close();
  await h?.close();
  await outbound?.close();
  await infra?.close();
});

/** A published agent with the sim LLM (or the failing model) and `generate_call_summary`. */
async function publishedAgent(name: string, opts: { summary: boolean; model?: string }): Promise<string> {
  const id = await createAgent(h, infra, alice, alice.workspaceId, name);
  const prov = await api(h, 'POST', `/api/v1/agents/${id}/providers`, { token: alice.token, body: { provider_type: 'llm', provider_name: 'sim', model_name: opts.model ?? '' } });
  expect(prov.status, JSON.stringify(prov.body)).toBeLessThan(300);
  const tel = await api(h, 'PUT', `/api/v1/agents/${id}/telephony`, { token: alice.token, body: { generate_call_summary: opts.summary } });
  expect(tel.status, JSON.stringify(tel.body)).toBe(200);
  const pub = await api(h, 'POST', `/api/v1/agents/${id}/versions/publish`, { token: alice.token });
  expect(pub.status, JSON.stringify(pub.body)).toBeLessThan(300);
  return id;
}

/** A call the engine ends itself: the record writer writes start, one turn and the end. */
async function engineEndedCall(agentId: string): Promise<string> {
  const sc = sessionConfig({ agent_id: agentId, workspace_id: alice.workspaceId });
  const rec = writer.recorderFor(sc);
  const t0 = Date.now();
  rec.start({ session_id: sc.session_id, agent_id: agentId, workspace_id: alice.workspaceId, user_id: 'caller-1', metadata: {}, started_at_ms: t0 });
  rec.turn({ ...turnRecord(1, { startedAtMs: t0 + 1000 }), user_text: 'my order 1234 never arrived', assistant_text: 'I have re-sent order 1234.' });
  rec.end(endRecord(1, t0));
  await writer.flush();
  return rec.conversationId;
}

describe('summaries for engine-ended calls', () => {
  it('an engine-ended call of an agent with generate_call_summary gets its summary from the published LLM', { timeout: 20_000 }, async () => {
    const agent = await publishedAgent('Summaries on', { summary: true });
    const id = await engineEndedCall(agent);
    const outcome = await h.conversations.summarizer.waitFor(id);
    expect(outcome.status).toBe('completed');
    const [row] = await infra.sql`select status, summary, summary_status, summary_error from conversations where id = ${id}`;
    expect(row).toMatchObject({ status: 'completed', summary_status: 'completed', summary_error: null });
    expect(row.summary).toContain('order 1234 never arrived');
    const got = await api(h, 'GET', `/api/v1/conversations/${id}`, { token: alice.token });
    expect(got.body.data.conversation.summary).toBe(row.summary);
  });

  it('no summary when the published version does not ask for one', { timeout: 20_000 }, async () => {
    const agent = await publishedAgent('Summaries off', { summary: false });
    const id = await engineEndedCall(agent);
    expect((await h.conversations.summarizer.waitFor(id)).status).toBe('skipped');
    const [row] = await infra.sql`select summary, summary_status from conversations where id = ${id}`;
    expect(row).toEqual({ summary: null, summary_status: 'skipped' });
  });
});

describe('failing LLM -> summary job retried then marked failed', () => {
  it('the call record stays intact, the job is retried, then the summary is marked failed with its error', { timeout: 30_000 }, async () => {
    const agent = await publishedAgent('Outage', { summary: true, model: BROKEN_MODEL });
    const before = brokenCalls;
    const id = await engineEndedCall(agent);
    const [ended] = await infra.sql`select status, total_turns, total_duration_ms, ended_at, metadata from conversations where id = ${id}`;
    const outcome = await h.conversations.summarizer.waitFor(id, (o) => o.status === 'failed');
    expect(outcome.reason).toContain('provider down');
    // 1 attempt + 3 retries (QUEUE_SETTINGS['post-call.summary'].retryLimit)
    expect(brokenCalls - before).toBe(4);
    const [row] = await infra.sql`select status, total_turns, total_duration_ms, ended_at, metadata, summary, summary_status, summary_error from conversations where id = ${id}`;
    expect(row).toMatchObject({ ...ended, summary: null, summary_status: 'failed' });
    expect(row.summary_error).toContain('provider down');
    expect(await infra.sql`select count(*)::int as n from messages where conversation_id = ${id}`).toEqual([{ n: 2 }]);
    // pg-boss records the failure just after the handler threw: bounded poll of its visible state.
    const job = async () => (await infra.sql.unsafe(`select state, retry_count from "${h.jobs.schema}".job where name = 'post-call.summary' and singleton_key = $1`, [id]))[0];
    await expect.poll(job, { timeout: 5000, interval: 50 }).toMatchObject({ state: 'failed', retry_count: 3 });
  });
});
