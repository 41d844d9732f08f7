/**
 * Issue 17, usage metering and credits (docs/billing.md), against real Postgres and Redis:
 * prices (operator only, bad units and amounts named), top-ups idempotent by key, the ledger and
 * its pagination, fencing, metering of a conversation written by the engine's record writer
 * (debit = Σ quantity × price, once however often the outbox is relayed), the state published to
 * the registry for engines, and BILLING_ENABLED off metering nothing.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { BillingService } from '../../shared/gen/voiceplane/v1/billing_pb.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { meterConversation } from '../../control-plane/billing/store.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { newId } from '../../shared/ids.js';
import { FLUSH_ALL } from '../../shared/registry/index.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { createAgent } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const ORG_KEY = 'org-key-billing-tests-0123456789abcdef';
const B = '/api/v1/billing';
const PRICES = { audio_second: 1000, llm_input_token: 3, llm_output_token: 7, tts_character: 2, tool_call: 500 };

let infra: TestInfra;
let cp: ControlPlane;
let writer: ConversationWriter;
let alice: TestUser;
let bob: TestUser;
let agent: string;

beforeAll(async () => {
  infra = await startTestInfra({ orgApiKey: ORG_KEY, billingEnabled: true });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5 } });
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
  alice = await createTestUser(cp);
  bob = await createTestUser(cp);
  agent = await createAgent(cp as never, infra, alice, alice.workspaceId, 'Metered agent');
});

afterAll(async () => {
  await writer?.close();
  await cp?.close();
  await infra?.close();
});

const op = { token: ORG_KEY };
const topUp = (ws: string, body: Record<string, unknown>, opts: { token?: string; key?: string } = {}) =>
  api(cp, 'POST', `${B}/workspaces/${ws}/top-ups`, { token: opts.token ?? ORG_KEY, body, headers: opts.key ? { 'idempotency-key': opts.key } : {} });
const balanceOf = async (ws: string, token = ORG_KEY) => (await api(cp, 'GET', `${B}/workspaces/${ws}/balance`, { token })).body.data.balance_micros as number;

function expectInvalid(res: { status: number; body: any }, field: string): void {
  expect(res.status, JSON.stringify(res.body)).toBe(400);
  expect(res.body.error.code).toBe('INVALID_REQUEST');
  expect(res.body.error.details[0].field).toBe(field);
}

/** Σ of the ledger equals the cached balance (the cache is never the only record). */
async function expectLedgerSums(ws: string): Promise<number> {
  const [{ sum }] = await infra.sql<{ sum: number }[]>`select coalesce(sum(amount_micros), 0)::float8 as sum from billing_ledger where workspace_id = ${ws}`;
  expect(await balanceOf(ws)).toBe(sum);
  return sum;
}

describe('prices', () => {
  it('the operator sets prices; unknown units and negative or fractional prices are 400 naming the field; others get 403', async () => {
    const list = Object.entries(PRICES).map(([unit, price_micros]) => ({ unit, price_micros }));
    const set = await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: list } });
    expect(set.status, JSON.stringify(set.body)).toBe(200);
    expect(set.body.data).toEqual(list);
    expect((await api(cp, 'GET', `${B}/prices`, { token: alice.token })).body.data).toEqual(list);

    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [{ unit: 'audio_second', price_micros: 1 }, { unit: 'gpu_hour', price_micros: 1 }] } }), 'prices[1].unit');
    // A missing (or null) price is refused, never read as 0 (free audio: calls without a time limit).
    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [{ unit: 'audio_second' }] } }), 'prices[0].price_micros');
    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [{ unit: 'audio_second', price_micros: null }] } }), 'prices[0].price_micros');
    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [{ unit: 'tool_call', price_micros: -5 }] } }), 'prices[0].price_micros');
    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [{ unit: 'tool_call', price_micros: 1.5 }] } }), 'prices[0].price_micros');
    expectInvalid(await api(cp, 'PUT', `${B}/prices`, { ...op, body: { prices: [] } }), 'prices');
    const denied = await api(cp, 'PUT', `${B}/prices`, { token: alice.token, body: { prices: [{ unit: 'tool_call', price_micros: 0 }] } });
    expect(denied.status).toBe(403);
    // Nothing above changed a price.
    expect((await api(cp, 'GET', `${B}/prices`, op)).body.data).toEqual(list);
  });
});

describe('top-ups and the ledger', () => {
  it('a top-up is idempotent by its Idempotency-Key (or reference); a reused key with another amount is 409', async () => {
    const ws = alice.workspaceId;
    const key = `topup-${newId()}`;
    const first = await topUp(ws, { amount_micros: 5_000_000, note: 'first' }, { key });
    expect(first.status, JSON.stringify(first.body)).toBe(201);
    expect(first.body.data).toMatchObject({ balance_micros: 5_000_000, replayed: false, entry: { kind: 'top_up', amount_micros: 5_000_000, reference: key, note: 'first' } });
    const again = await topUp(ws, { amount_micros: 5_000_000 }, { key });
    expect(again.body.data).toMatchObject({ balance_micros: 5_000_000, replayed: true, entry: { id: first.body.data.entry.id } });
    // The same key in the body is the same request.
    expect((await topUp(ws, { amount_micros: 5_000_000, reference: key })).body.data.replayed).toBe(true);
    const reused = await topUp(ws, { amount_micros: 7 }, { key });
    expect(reused.status).toBe(409);
    expect(reused.body.error.code).toBe('CONFLICT');
    // Concurrent retries of one new key: one entry.
    const k2 = `topup-${newId()}`;
    const burst = await Promise.all([1, 2, 3, 4].map(() => topUp(ws, { amount_micros: 1_000_000 }, { key: k2 })));
    expect(burst.map((r) => r.status)).toEqual([201, 201, 201, 201]);
    expect(burst.filter((r) => !r.body.data.replayed)).toHaveLength(1);
    expect(await balanceOf(ws)).toBe(6_000_000);
    expect(await expectLedgerSums(ws)).toBe(6_000_000);
  });

  it('bad input is 400 naming the field', async () => {
    const ws = alice.workspaceId;
    expectInvalid(await topUp(ws, { amount_micros: -100 }, { key: 'k-neg' }), 'amount_micros');
    expectInvalid(await topUp(ws, { amount_micros: 0 }, { key: 'k-zero' }), 'amount_micros');
    expectInvalid(await topUp(ws, { amount_micros: 2.5 }, { key: 'k-frac' }), 'amount_micros');
    expectInvalid(await topUp(ws, { amount_micros: 1e16 }, { key: 'k-big' }), 'amount_micros');
    expectInvalid(await topUp(ws, { amount_micros: 100 }), 'reference');
    expectInvalid(await topUp(ws, { amount_micros: 100, reference: 'a' }, { key: 'b' }), 'reference');
    expectInvalid(await topUp(ws, { amount_micros: 100, reference: 'x'.repeat(201) }), 'reference');
    expectInvalid(await topUp('not-a-uuid', { amount_micros: 100 }, { key: 'k' }), 'workspace_id');
    expectInvalid(await api(cp, 'GET', `${B}/workspaces/${ws}/ledger?limit=201`, op), 'limit');
    expectInvalid(await api(cp, 'GET', `${B}/workspaces/${ws}/ledger?offset=-1`, op), 'offset');
    expectInvalid(await api(cp, 'POST', `${B}/workspaces/${ws}/adjustments`, { ...op, body: { amount_micros: 0, reference: 'adj-0' } }), 'amount_micros');
    // The balance stays an exact number: a top-up past ±9e15 is refused and writes nothing (it was a bigint overflow, a 500).
    const big = await createTestUser(cp);
    for (let i = 0; i < 9; i++) expect((await topUp(big.workspaceId, { amount_micros: 1e15 }, { key: `big-${i}` })).status).toBe(201);
    expectInvalid(await topUp(big.workspaceId, { amount_micros: 1 }, { key: 'big-over' }), 'amount_micros');
    expect(await balanceOf(big.workspaceId)).toBe(9e15);
    expect((await api(cp, 'GET', `${B}/workspaces/${big.workspaceId}/ledger`, op)).body.meta.total).toBe(9);
  });

  it('fencing: another tenant reads 404, a non-operator top-up is 403, an unknown workspace is 404', async () => {
    const ws = alice.workspaceId;
    expect((await api(cp, 'GET', `${B}/workspaces/${ws}/balance`, { token: bob.token })).status).toBe(404);
    expect((await api(cp, 'GET', `${B}/workspaces/${ws}/ledger`, { token: bob.token })).status).toBe(404);
    expect((await topUp(ws, { amount_micros: 100 }, { token: bob.token, key: 'bob' })).status).toBe(403);
    // The owner reads her own ledger but cannot mint credits.
    expect((await api(cp, 'GET', `${B}/workspaces/${ws}/balance`, { token: alice.token })).status).toBe(200);
    expect((await topUp(ws, { amount_micros: 100 }, { token: alice.token, key: 'self' })).status).toBe(403);
    const unknown = newId();
    expect((await api(cp, 'GET', `${B}/workspaces/${unknown}/balance`, op)).status).toBe(404);
    expect((await topUp(unknown, { amount_micros: 100 }, { key: 'ghost' })).status).toBe(404);
    expect(await balanceOf(ws)).toBe(6_000_000);
  });

  it('adjustments take either sign; the ledger pages newest first with meta', async () => {
    const ws = bob.workspaceId;
    await topUp(ws, { amount_micros: 1000 }, { key: 'b1' });
    const adj = await api(cp, 'POST', `${B}/workspaces/${ws}/adjustments`, { ...op, body: { amount_micros: -300, reference: 'refund-fix', note: 'correction' } });
    expect(adj.status, JSON.stringify(adj.body)).toBe(201);
    expect(adj.body.data.balance_micros).toBe(700);
    await topUp(ws, { amount_micros: 50 }, { key: 'b2' });
    const p1 = await api(cp, 'GET', `${B}/workspaces/${ws}/ledger?limit=2`, { token: bob.token });
    expect(p1.status).toBe(200);
    expect(p1.body.meta).toEqual({ page: 1, per_page: 2, total: 3, total_pages: 2 });
    expect(p1.body.data.map((e: any) => [e.kind, e.amount_micros])).toEqual([
      ['top_up', 50],
      ['adjustment', -300],
    ]);
    // Every entry has every field: `usage` is null where it does not apply, conversation_id empty.
    expect(p1.body.data[0]).toMatchObject({ usage: null, conversation_id: '', reference: 'b2' });
    expect(Object.keys(p1.body.data[1]).sort()).toEqual(['amount_micros', 'conversation_id', 'created_at', 'id', 'kind', 'note', 'reference', 'usage', 'workspace_id']);
    expect(adj.body.data.entry.usage).toBeNull();
    const p2 = await api(cp, 'GET', `${B}/workspaces/${ws}/ledger?limit=2&offset=2`, { token: bob.token });
    expect(p2.body.data.map((e: any) => e.amount_micros)).toEqual([1000]);
    expect(await expectLedgerSums(ws)).toBe(750);
  });
});

describe('Connect / gRPC', () => {
  it('the same service: a top-up keyed by `reference` is idempotent; errors carry Connect codes', async () => {
    const client = createClient(BillingService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '1.1' }));
    const headers = { authorization: `Bearer ${ORG_KEY}` };
    const ws = bob.workspaceId;
    const before = (await client.getBalance({ workspaceId: ws }, { headers })).balanceMicros;
    const a = await client.topUp({ workspaceId: ws, amountMicros: 40, reference: 'grpc-1' }, { headers });
    const b = await client.topUp({ workspaceId: ws, amountMicros: 40, reference: 'grpc-1' }, { headers });
    expect([a.replayed, b.replayed, b.entry?.id]).toEqual([false, true, a.entry?.id]);
    expect(b.balanceMicros).toBe(before + 40);
    const bad = await client.topUp({ workspaceId: ws, amountMicros: -1, reference: 'grpc-2' }, { headers }).catch((e: unknown) => e);
    expect(bad).toBeInstanceOf(ConnectError);
    expect((bad as ConnectError).code).toBe(Code.InvalidArgument);
    const fenced = await client.getBalance({ workspaceId: ws }, { headers: { authorization: `Bearer ${alice.token}` } }).catch((e: unknown) => e);
    expect((fenced as ConnectError).code).toBe(Code.NotFound);
    // Back to where the REST cases below expect bob's balance.
    await client.adjust({ workspaceId: ws, amountMicros: -40, reference: 'grpc-undo' }, { headers });
  });
});

describe('metering', () => {
  it('an ended conversation is debited Σ quantity × price once, and the new state reaches the registry', async () => {
    const ws = alice.workspaceId;
    const before = await balanceOf(ws);
    const sc = sessionConfig({ agent_id: agent, workspace_id: ws });
    const rec = writer.recorderFor(sc, 'node-billing-test');
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: ws, metadata: {}, started_at_ms: t0 });
    const turns = [turnRecord(1, { startedAtMs: t0 + 10 }), turnRecord(2, { tool: true, startedAtMs: t0 + 20 })];
    for (const t of turns) rec.turn(t);
    rec.end(endRecord(2, t0)); // 12 345 ms
    await writer.flush();
    await cp.postCall.drain();

    const [debit] = await infra.sql<any[]>`select * from billing_ledger where conversation_id = ${rec.conversationId}`;
    expect(debit).toBeDefined();
    const quantities = {
      audio_second: 13,
      llm_input_token: turns[0].llm.tokens_input + turns[1].llm.tokens_input,
      llm_output_token: turns[0].llm.tokens_output + turns[1].llm.tokens_output,
      tts_character: turns[0].assistant_text.length + turns[1].assistant_text.length,
      tool_call: 1,
    };
    const cost = Object.entries(quantities).reduce((s, [u, q]) => s + q * PRICES[u as keyof typeof PRICES], 0);
    expect(debit).toMatchObject({ workspace_id: ws, kind: 'usage_debit', usage: { quantities, prices_micros: PRICES, status: 'completed' } });
    expect(Number(debit.amount_micros)).toBe(-cost);
    expect(await balanceOf(ws)).toBe(before - cost);
    expect(await expectLedgerSums(ws)).toBe(before - cost);

    // A re-relayed event (at-least-once) changes nothing.
    expect(await infra.sql.begin((tx) => meterConversation(tx, rec.conversationId))).toBeUndefined();
    expect(await balanceOf(ws)).toBe(before - cost);

    // The engine's view: the published state follows the debit (the billing.publish job).
    await expect.poll(async () => (await infra.registry.billing.getBillingState(ws))?.balanceMicros, { timeout: 10_000, interval: 100 }).toBe(before - cost);
    expect((await infra.registry.billing.getBillingState(ws))!.perSecondMicros).toBe(PRICES.audio_second);
  });

  it('a call live on an engine cannot be ended by a PUT (its engine records the real usage); a conversation recorded over REST costs nothing', async () => {
    const ws = alice.workspaceId;
    const before = await balanceOf(ws);
    const sc = sessionConfig({ agent_id: agent, workspace_id: ws });
    const rec = writer.recorderFor(sc, 'node-billing-test');
    const t0 = Date.now();
    rec.start({ session_id: sc.session_id, agent_id: agent, workspace_id: ws, metadata: {}, started_at_ms: t0 });
    await writer.flush();
    const early = await api(cp, 'PUT', `/api/v1/conversations/${rec.conversationId}`, { token: alice.token, body: { status: 'completed', total_turns: 0, total_duration_ms: 0 } });
    expect(early.status).toBe(409);
    expect(early.body.error.details).toEqual([{ field: 'status', problem: expect.stringContaining('live on a voice engine') }]);
    // A PUT that sends no status is an ordinary update of the live row (it was this same 409).
    const note = await api(cp, 'PUT', `/api/v1/conversations/${rec.conversationId}`, { token: alice.token, body: { user_id: 'crm-42' } });
    expect(note.status, JSON.stringify(note.body)).toBe(200);
    expect(note.body.data).toEqual({ id: rec.conversationId, status: 'active' });
    const turn = turnRecord(1, { startedAtMs: t0 + 10 });
    rec.turn(turn);
    // A client adding an assistant message (with token counts) to the engine's call: not our LLM
    // or TTS, not metered.
    const added = await api(cp, 'POST', '/api/v1/conversations/messages', { token: alice.token, body: { conversation_id: rec.conversationId, role: 'assistant', content: 'x'.repeat(500), tokens_input: 9000, tokens_output: 9000 } });
    expect(added.status, JSON.stringify(added.body)).toBe(201);
    const tc = await api(cp, 'POST', '/api/v1/conversations/tool-calls', { token: alice.token, body: { conversation_id: rec.conversationId, message_id: added.body.data.id, tool_name: 'mine', status: 'success', latency_ms: 5 } });
    expect(tc.status, JSON.stringify(tc.body)).toBe(201);
    rec.end(endRecord(1, t0));
    await writer.flush();
    await cp.postCall.drain();
    const [debit] = await infra.sql<any[]>`select * from billing_ledger where conversation_id = ${rec.conversationId}`;
    expect(debit.usage.quantities.audio_second).toBeGreaterThan(0);
    expect(debit.usage.quantities).toMatchObject({ tts_character: turn.assistant_text.length, llm_input_token: turn.llm.tokens_input, llm_output_token: turn.llm.tokens_output, tool_call: turn.tool_calls.length });

    // Recorded by the customer's own system over REST: ended, not metered.
    const own = await api(cp, 'POST', '/api/v1/conversations', { token: alice.token, body: { session_id: `rest-${Date.now()}`, agent_id: agent } });
    expect(own.status).toBe(201);
    expect((await api(cp, 'PUT', `/api/v1/conversations/${own.body.data.id}`, { token: alice.token, body: { status: 'completed', total_duration_ms: 3_600_000 } })).status).toBe(200);
    await cp.postCall.drain();
    expect(await infra.sql`select 1 from billing_ledger where conversation_id = ${own.body.data.id}`).toHaveLength(0);
    expect(await balanceOf(ws)).toBe(before + Number(debit.amount_micros));
  });

  it('a top-up is published to the registry right after its commit; may_call follows the balance', async () => {
    const ws = bob.workspaceId;
    expect((await api(cp, 'GET', `${B}/workspaces/${ws}/balance`, op)).body.data).toMatchObject({ balance_micros: 750, may_call: false, billing_enabled: true });
    const r = await topUp(ws, { amount_micros: 250 }, { key: 'b3' });
    // Published after the commit, without waiting for the job: poll briefly for the async write.
    await expect.poll(async () => (await infra.registry.billing.getBillingState(ws))?.balanceMicros, { timeout: 5000, interval: 20 }).toBe(r.body.data.balance_micros);
    // 1000 micro-credits: one second of audio at 1000 per second.
    expect((await api(cp, 'GET', `${B}/workspaces/${ws}/balance`, op)).body.data).toMatchObject({ balance_micros: 1000, may_call: true });
  });
});

describe('registry reconnect', () => {
  it('a lost subscription (FLUSH_ALL, what a Redis restart causes) republishes every state', async () => {
    const ws = alice.workspaceId;
    const truth = await balanceOf(ws);
    // What a restarted Redis would hold for a while: nothing true (here: a stale zero).
    await infra.registry.billing.putBillingState(ws, { balanceMicros: 0, perSecondMicros: 0, updatedAtMs: 0 });
    await infra.registry.invalidations.publish(FLUSH_ALL, FLUSH_ALL);
    await expect.poll(async () => (await infra.registry.billing.getBillingState(ws))?.balanceMicros, { timeout: 10_000, interval: 100 }).toBe(truth);
    expect((await infra.registry.billing.getBillingState(ws))!.perSecondMicros).toBe(PRICES.audio_second);
  });
});

describe('BILLING_ENABLED off', () => {
  it('meters nothing and publishes nothing; balances still answer', async () => {
    const off = await startTestInfra({ orgApiKey: ORG_KEY });
    const cpOff = await startControlPlane(off, { port: 0, host: '127.0.0.1' });
    const w = createConversationWriter({ sql: off.sql, logger: off.logger, clock: off.clock, flushMs: 10 });
    try {
      expect(off.config.billingEnabled).toBe(false);
      const carol = await createTestUser(cpOff);
      const a = await createAgent(cpOff as never, off, carol, carol.workspaceId, 'Free agent');
      await api(cpOff, 'PUT', `${B}/prices`, { token: ORG_KEY, body: { prices: [{ unit: 'audio_second', price_micros: 1000 }] } });
      const sc = sessionConfig({ agent_id: a, workspace_id: carol.workspaceId });
      const rec = w.recorderFor(sc, 'node-billing-off');
      rec.start({ session_id: sc.session_id, agent_id: a, workspace_id: carol.workspaceId, metadata: {}, started_at_ms: Date.now() });
      rec.turn(turnRecord(1));
      rec.end(endRecord(1, Date.now()));
      await w.flush();
      await cpOff.postCall.drain();
      // The outbox event was consumed (other handlers ran) without a debit.
      expect((await off.sql`select 1 from post_call_events`).length).toBe(0);
      expect((await off.sql`select 1 from billing_ledger`).length).toBe(0);
      const bal = await api(cpOff, 'GET', `${B}/workspaces/${carol.workspaceId}/balance`, { token: carol.token });
      expect(bal.body.data).toEqual({ workspace_id: carol.workspaceId, balance_micros: 0, may_call: true, billing_enabled: false });
      const pre = await api(cpOff, 'POST', `${B}/workspaces/${carol.workspaceId}/top-ups`, { token: ORG_KEY, body: { amount_micros: 10, reference: 'pre' } });
      expect(pre.status).toBe(201);
      expect(await off.registry.billing.getBillingState(carol.workspaceId)).toBeUndefined();
    } finally {
      await w.close();
      await cpOff.close();
      await off.close();
    }
  });
});
