/**
 * Issue 17, credits on the voice socket (docs/billing.md; spec doc 2, Authentication 3 and the
 * socket failure frames), in real time: a control plane with BILLING_ENABLED publishes credit
 * states into Redis, a sim engine node reads them at connect (never Postgres). An empty balance
 * gets the `insufficient_balance` frame and the close; a top-up lets the workspace call; a call
 * whose allowance runs out mid-reply finishes the reply, speaks the notice and ends; its debit
 * lands in the ledger and the next connect is refused; billing off checks nothing.
 * Calls are kept to a few seconds of sim speech.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import type { EngineNode } from '../../media-engine/node.js';
import { CREDIT_NOTICE_TEXT } from '../../media-engine/session/credit.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { VoiceClient } from '../helpers/voice-client.js';

const ORG_KEY = 'org-key-engine-billing-0123456789abcdef';
const B = '/api/v1/billing';
/** About 3 s of sim speech: long enough for a 2.5 s allowance to run out while it plays. */
const LONG_REPLY = 'We open at noon and close at ten.';

let infra: TestInfra;
let cp: ControlPlane;
let writer: ConversationWriter;
let engine: EngineNode;
let engineOff: EngineNode;
let alice: TestUser;
let bob: TestUser;
let carol: TestUser;
const clients: VoiceClient[] = [];

beforeAll(async () => {
  infra = await startTestInfra({ orgApiKey: ORG_KEY, billingEnabled: true });
  cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5 } });
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock: infra.clock, flushMs: 10 });
  const llm = { script: { rules: [{ when: 'hours', reply: LONG_REPLY }] } };
  engine = await startSimEngine({ config: infra.config, logger: infra.logger, registry: infra.registry, nodeId: 'billing-on', recorderFactory: (sc, nodeId) => writer.recorderFor(sc, nodeId), llm });
  engineOff = await startSimEngine({ config: { ...infra.config, billingEnabled: false }, logger: infra.logger, registry: infra.registry, nodeId: 'billing-off', llm });
  [alice, bob, carol] = await Promise.all([createTestUser(cp), createTestUser(cp), createTestUser(cp)]);
  const set = await api(cp, 'PUT', `${B}/prices`, { token: ORG_KEY, body: { prices: [{ unit: 'audio_second', price_micros: 1000 }] } });
  expect(set.status).toBe(200);
});

afterAll(async () => {
  for (const c of clients) c.close();
  await engine?.close();
  await engineOff?.close();
  await writer?.close();
  await cp?.close();
  await infra?.close();
});

/** A started session on `node` (what POST /voice/sessions/start stores) and a caller on its socket. */
async function call(node: EngineNode, workspaceId: string, overrides: Partial<SessionConfig> = {}): Promise<{ c: VoiceClient; sc: SessionConfig }> {
  const sc = sessionConfig({ workspace_id: workspaceId, ...overrides });
  const now = Date.now();
  await infra.registry.sessions.putSession({ sessionId: sc.session_id, agentId: sc.agent_id, nodeId: node.nodeId, config: sc, createdAtMs: now, connectDeadlineMs: now + 30_000 });
  const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sc.session_id}`);
  clients.push(c);
  return { c, sc };
}

async function topUp(workspaceId: string, amount: number, key: string): Promise<void> {
  const r = await api(cp, 'POST', `${B}/workspaces/${workspaceId}/top-ups`, { token: ORG_KEY, body: { amount_micros: amount }, headers: { 'idempotency-key': key } });
  expect(r.status, JSON.stringify(r.body)).toBe(201);
  // Published right after the commit (the queued job repeats it).
  await expect.poll(async () => (await infra.registry.billing.getBillingState(workspaceId))?.balanceMicros, { timeout: 5000, interval: 20 }).toBe(r.body.data.balance_micros);
}

async function expectRefused(c: VoiceClient): Promise<void> {
  const err = await c.waitForType('error', 5000);
  expect(err).toMatchObject({ type: 'error', code: 'insufficient_balance' });
  expect(typeof err.message).toBe('string');
  await c.closed(5000);
  expect(c.types()).not.toContain('pipeline_ready');
}

describe('billing on', () => {
  it('a workspace with no credit gets insufficient_balance and the socket closes; a top-up lets it call', async () => {
    const refused = await call(engine, alice.workspaceId);
    await expectRefused(refused.c);

    await topUp(alice.workspaceId, 60_000, 'alice-1'); // 60 s of audio
    const ok = await call(engine, alice.workspaceId);
    await ok.c.waitForType('pipeline_ready', 5000);
    ok.c.close();
    await ok.c.closed(5000);
  });

  it('an allowance that runs out mid-reply: the reply finishes, the notice plays, the call ends; the debit follows', async () => {
    await topUp(bob.workspaceId, 2500, 'bob-1'); // 2.5 s at 1000 micro-credits per second
    const { c, sc } = await call(engine, bob.workspaceId);
    await c.waitForType('pipeline_ready', 5000);
    await c.say('what are your hours');
    const done = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1, 10_000);
    const err = await c.waitFor((e) => e.type === 'error', 10_000);
    expect(err).toMatchObject({ code: 'insufficient_balance' });
    // The turn boundary: the whole reply was played before the notice started.
    expect(err.at).toBeGreaterThanOrEqual(done.at);
    expect(done.assistant_text).toBe(LONG_REPLY);
    const ended = await c.waitForType('call_ended', 10_000);
    expect(ended.reason).toBe('insufficient_balance');
    await c.closed(5000);
    // What the caller heard (the sim decoder lowercases): the reply, then the notice.
    const heard = c.heard.join(' ');
    expect(heard.indexOf(LONG_REPLY.toLowerCase())).toBeGreaterThanOrEqual(0);
    expect(heard.indexOf(CREDIT_NOTICE_TEXT.toLowerCase())).toBeGreaterThan(heard.indexOf(LONG_REPLY.toLowerCase()));

    // The conversation's debit (audio seconds x price) lands once; the overdraft is one turn at most.
    await writer.flush();
    await cp.postCall.drain();
    const [conv] = await infra.sql<{ id: string; total_duration_ms: number }[]>`select id, total_duration_ms::float8 as total_duration_ms from conversations where session_id = ${sc.session_id}`;
    const [debit] = await infra.sql<{ amount_micros: number }[]>`select amount_micros::float8 as amount_micros from billing_ledger where conversation_id = ${conv.id}`;
    expect(debit.amount_micros).toBe(-Math.ceil(conv.total_duration_ms / 1000) * 1000);
    // The notice is recorded (marked) but its characters are not the workspace's usage.
    const said = await infra.sql<{ content: string; metadata: Record<string, unknown> }[]>`select content, metadata from messages where conversation_id = ${conv.id} and role = 'assistant' order by created_at`;
    const notice = said.find((m) => m.content === CREDIT_NOTICE_TEXT);
    expect(notice?.metadata).toMatchObject({ prompt: 'goodbye', platform_notice: 'credit_exhausted' });
    const [usage] = await infra.sql<{ usage: { quantities: Record<string, number> } }[]>`select usage from billing_ledger where conversation_id = ${conv.id}`;
    const agentChars = said.filter((m) => m !== notice).reduce((n, m) => n + [...m.content].length, 0);
    expect(agentChars).toBeGreaterThanOrEqual(LONG_REPLY.length);
    expect(usage.usage.quantities.tts_character).toBe(agentChars);
    const balance = 2500 + debit.amount_micros;
    expect(balance).toBeLessThan(0);
    // Once the engine's view has the debit, the workspace cannot call again.
    await expect.poll(async () => (await infra.registry.billing.getBillingState(bob.workspaceId))?.balanceMicros, { timeout: 10_000, interval: 100 }).toBe(balance);
    await expectRefused((await call(engine, bob.workspaceId)).c);
  });
});

/** A carrier media stream for a started session: `connected` and `start`; resolves with the close code and reason. */
async function carrierStream(node: EngineNode, workspaceId: string): Promise<{ code: number; reason: string }> {
  const sc = sessionConfig({ workspace_id: workspaceId, call_direction: 'inbound' });
  const now = Date.now();
  await infra.registry.sessions.putSession({ sessionId: sc.session_id, agentId: sc.agent_id, nodeId: node.nodeId, config: sc, createdAtMs: now, connectDeadlineMs: now + 30_000 });
  const ws = new WebSocket(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/twilio/CA${'0'.repeat(32)}`);
  const closed = new Promise<{ code: number; reason: string }>((resolve) => ws.on('close', (code, reason) => resolve({ code, reason: reason.toString() })));
  await new Promise<void>((resolve, reject) => (ws.once('open', () => resolve()), ws.once('error', reject)));
  const streamSid = `MZ${'1'.repeat(32)}`;
  ws.send(JSON.stringify({ event: 'connected', protocol: 'Call', version: '1.0.0' }));
  ws.send(JSON.stringify({ event: 'start', sequenceNumber: '1', streamSid, start: { streamSid, accountSid: 'AC1', callSid: 'CA1', tracks: ['inbound'], customParameters: { session_id: sc.session_id }, mediaFormat: { encoding: 'audio/x-mulaw', sampleRate: 8000, channels: 1 } } }));
  const timeout = new Promise<never>((_, reject) => setTimeout(() => reject(new Error('carrier stream not closed')), 5000).unref());
  try {
    return await Promise.race([closed, timeout]);
  } finally {
    ws.terminate();
  }
}

describe('carrier media streams', () => {
  it('a workspace with no credit: the stream is closed at start (the carrier hangs up), no call starts', async () => {
    const callsBefore = engine.calls.size;
    const { code, reason } = await carrierStream(engine, carol.workspaceId);
    expect(code).toBe(1008);
    expect(reason).toBe('insufficient_balance');
    expect(engine.calls.size).toBe(callsBefore);
  });
});

describe('billing off', () => {
  it('an engine with BILLING_ENABLED off checks nothing: a workspace without credit calls', async () => {
    expect(await infra.registry.billing.getBillingState(carol.workspaceId)).toBeUndefined();
    const { c } = await call(engineOff, carol.workspaceId);
    await c.waitForType('pipeline_ready', 5000);
    c.close();
    await c.closed(5000);
  });
});
