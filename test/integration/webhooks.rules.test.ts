/**
 * Issue 14, webhook rules beyond the delivery schedule: `TEST_LIMIT` (five un-sent test pings),
 * `WEBHOOKS_UNAVAILABLE` (delivery switched off), endpoint removed -> pending deliveries
 * `skipped`, `abandoned` calls closed by the sweeper, carrier calls that never connected
 * (`failed`), and the same routes over Connect (gRPC family).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient, ConnectError, Code } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { newCallRecord } from '../../control-plane/telephony/live-calls.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { WebhookService } from '../../shared/gen/voiceplane/v1/webhooks_pb.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { createAgent, offsetClock } from '../unit/records/control-plane.js';

const S = '/api/v1/call-center/settings';
const D = '/api/v1/call-center/webhooks/deliveries';
const TEST = '/api/v1/call-center/webhooks/test';

let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;
let receiver: WebhookReceiver;
let secret: string;
let writer: ConversationWriter;
const clock = offsetClock();

beforeAll(async () => {
  clock.advance(-2 * 3600_000); // see webhooks.delivery.test.ts: attempts wait for the injected clock
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  cp = await startControlPlane({ ...infra, clock }, { port: 0, host: '127.0.0.1', jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, postCallSweepMs: 500, webhookUnrecordedCheckS: 1 });
  owner = await createTestUser(cp);
  receiver = await startWebhookReceiver();
  const put = await api(cp, 'PUT', S, { token: owner.token, body: { webhook_url: receiver.url } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock, flushMs: 10 });
});

afterAll(async () => {
  await writer?.close();
  await cp?.close();
  await receiver?.close();
  await infra?.close();
});

const statusOf = async (id: string) => (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data.status;
const ping = async () => api(cp, 'POST', TEST, { token: owner.token });
const attemptsOf = async (id: string) => (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data.attempt_log.length;
const openDeliveries = async (workspaceId: string) =>
  (await infra.sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where workspace_id = ${workspaceId} and status in ('pending', 'in_flight')`)[0].n;

describe('TEST_LIMIT: five test pings still un-sent', () => {
  it('the sixth is 429 TEST_LIMIT; after the endpoint recovers they drain and pings work again', { timeout: 40_000 }, async () => {
    await receiver.stop();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      const r = await ping();
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      ids.push(r.body.data.delivery_id);
    }
    const sixth = await ping();
    expect(sixth.status).toBe(429);
    expect(sixth.body.error.code).toBe('TEST_LIMIT');
    // Retry-After (spec error table): until the earliest un-sent ping's next attempt is over: its
    // due time (now, or 30 s + up to 20 % after a failed first attempt) plus the 10 s attempt timeout.
    const retryAfter = Number(sixth.headers['retry-after']);
    expect(retryAfter, String(sixth.headers['retry-after'])).toBeGreaterThanOrEqual(10);
    expect(retryAfter).toBeLessThanOrEqual(36 + 10 + 1);
    for (const id of ids) await expect.poll(async () => (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data.attempt_log.length, { timeout: 10_000 }).toBeGreaterThanOrEqual(1);
    // Every ping failed once: the earliest is due about 30-36 s on, so the hint moved with it.
    const later = await ping();
    expect(later.status).toBe(429);
    expect(Number(later.headers['retry-after'])).toBeGreaterThan(10);
    expect(Number(later.headers['retry-after'])).toBeLessThanOrEqual(36 + 10 + 1);
    // The log lists summaries (attempt count, last outcome); the attempts are in the single read.
    const log = await api(cp, 'GET', `${D}?limit=200`, { token: owner.token });
    for (const id of ids) {
      const row = log.body.data.find((d: { id: string }) => d.id === id);
      expect(row.attempts).toBeGreaterThanOrEqual(1);
      expect(row).not.toHaveProperty('attempt_log');
      expect(row).not.toHaveProperty('body');
      const one = (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data;
      expect(one.attempt_log).toHaveLength(one.attempts);
      expect(one.body).toEqual(expect.any(String));
    }
    await receiver.start();
    clock.advance(40_000);
    for (const id of ids) await expect.poll(() => statusOf(id), { timeout: 15_000, interval: 100 }).toBe('delivered');
    const after = await ping();
    expect(after.status).toBe(202);
    await expect.poll(() => statusOf(after.body.data.delivery_id), { timeout: 10_000, interval: 50 }).toBe('delivered');
  });
});

describe('concurrent requests on a fresh workspace', () => {
  it('two first PUTs at once mint one secret between them; ten pings at once stop at the limit', { timeout: 30_000 }, async () => {
    const other = await createTestUser(cp);
    await receiver.stop();
    try {
      const puts = await Promise.all([0, 1].map(() => api(cp, 'PUT', S, { token: other.token, body: { webhook_url: receiver.url } })));
      expect(puts.map((p) => p.status)).toEqual([200, 200]);
      // The one secret shown is the one stored: a second one would leave its caller verifying with a wrong key.
      expect(puts.filter((p) => 'webhook_secret' in p.body.data)).toHaveLength(1);
      const pings = await Promise.all(Array.from({ length: 10 }, () => api(cp, 'POST', TEST, { token: other.token })));
      expect(pings.filter((p) => p.status === 202)).toHaveLength(5);
      expect(pings.filter((p) => p.status === 429).map((p) => p.body.error.code)).toEqual(Array(5).fill('TEST_LIMIT'));
      // Clearing the endpoint skips them, so they do not linger for the suites below. One already
      // in flight fails against the stopped receiver and is skipped then, before it comes back.
      await api(cp, 'PUT', S, { token: other.token, body: { webhook_url: '' } });
      await expect.poll(() => openDeliveries(other.workspaceId), { timeout: 10_000, interval: 50 }).toBe(0);
    } finally {
      await receiver.start();
    }
  });
});

describe('endpoint removed -> pending deliveries skipped', () => {
  it('a pending delivery becomes skipped when webhook_url is cleared; the secret survives', { timeout: 30_000 }, async () => {
    receiver.respond({ status: 503 });
    const id = (await ping()).body.data.delivery_id;
    // Pending again after its first attempt (not pending before it: that attempt could race the PUT).
    await expect.poll(() => attemptsOf(id), { timeout: 10_000, interval: 50 }).toBe(1);
    await expect.poll(() => statusOf(id), { timeout: 10_000, interval: 50 }).toBe('pending');
    try {
      const cleared = await api(cp, 'PUT', S, { token: owner.token, body: { webhook_url: '' } });
      expect(cleared.body.data).toMatchObject({ webhook_url: '', has_webhook_secret: true });
      expect(cleared.body.data).not.toHaveProperty('webhook_secret');
      expect(await statusOf(id)).toBe('skipped');
      const listed = await api(cp, 'GET', `${D}?status=skipped`, { token: owner.token });
      expect(listed.body.data.map((d: any) => d.id)).toContain(id);
    } finally {
      const restored = await api(cp, 'PUT', S, { token: owner.token, body: { webhook_url: receiver.url } });
      expect(restored.body.data).not.toHaveProperty('webhook_secret'); // not rotated: the old secret still signs
    }
  });

  it('an attempt in flight when the endpoint is removed, and then failing, is skipped rather than retried', { timeout: 30_000 }, async () => {
    receiver.respond({ status: 503 });
    const release = receiver.hold();
    let released = false;
    try {
      const id = (await ping()).body.data.delivery_id;
      await expect.poll(() => receiver.held, { timeout: 10_000, interval: 20 }).toBe(1);
      expect(await statusOf(id)).toBe('in_flight');
      // Read while the attempt is out: counted, no next attempt yet (its due time is past), not in the log until it ends.
      const out = (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data;
      expect({ attempts: out.attempts, next: out.next_attempt_at, log: out.attempt_log }).toEqual({ attempts: 1, next: null, log: [] });
      await api(cp, 'PUT', S, { token: owner.token, body: { webhook_url: '' } });
      expect(await statusOf(id)).toBe('in_flight'); // already out: the removal does not recall it
      release();
      released = true;
      await expect.poll(() => statusOf(id), { timeout: 10_000, interval: 50 }).toBe('skipped');
      const d = (await api(cp, 'GET', `${D}/${id}`, { token: owner.token })).body.data;
      expect(d.attempts).toBe(1);
      expect(d.next_attempt_at ?? null).toBeNull();
    } finally {
      if (!released) release();
      await api(cp, 'PUT', S, { token: owner.token, body: { webhook_url: receiver.url } });
    }
  });
});

describe('abandoned: a carrier call with no recorded end, closed by the sweeper', () => {
  it('gets one call.completed with status abandoned and analysis_status skipped', { timeout: 30_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Night line');
    const callId = newId();
    const sc = sessionConfig({ agent_id: agentId, workspace_id: owner.workspaceId });
    const rec = writer.recorderFor(sc);
    rec.start({ session_id: sc.session_id, agent_id: agentId, workspace_id: owner.workspaceId, call_id: callId, metadata: {}, started_at_ms: clock.now() - 7 * 3600_000 });
    await writer.flush();
    const before = receiver.requests.length;
    expect(await cp.abandoned.sweep()).toBeGreaterThanOrEqual(1);
    const got = await receiver.until(before + 1);
    expect(verifySignature(secret, got)).toBe(true);
    expect(got.json.data).toMatchObject({ call_id: callId, conversation_id: rec.conversationId, status: 'abandoned', analysis_status: 'skipped' });
    expect(await cp.abandoned.sweep()).toBe(0);
  });
});

/** The first delivery the receiver got for `callId`. */
async function arrivalFor(callId: string) {
  await expect.poll(() => receiver.requests.some((r) => r.json?.data?.call_id === callId), { timeout: 15_000, interval: 50 }).toBe(true);
  return receiver.requests.find((r) => r.json?.data?.call_id === callId)!;
}

describe('failed: a carrier call that never connected', () => {
  it('busy -> one call.completed with status failed', { timeout: 30_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Dialer');
    const call = newCallRecord({ call_id: newId(), agent_id: agentId, workspace_id: owner.workspaceId, user_id: owner.userId, direction: 'outbound', status: 'ringing', from_number: '+14155550111', to_number: '+14155550122', created_at_ms: clock.now() - 20_000 });
    await cp.webhooks.events.onCarrierCallEnded({ type: 'ended', call, detail: 'busy' });
    const got = await arrivalFor(call.call_id);
    expect(got.json.data).toMatchObject({ call_id: call.call_id, status: 'failed', direction: 'outbound', caller_number: '+14155550111', callee_number: '+14155550122', answered_at: null, analysis_status: 'skipped', ai_agent: { id: agentId, name: 'Dialer' } });
    await expect.poll(async () => (await infra.sql`select count(*)::int as n from webhook_deliveries where call_id = ${call.call_id}`)[0].n, { timeout: 5000 }).toBe(1);
  });

  it('a campaign contact that never connected gets no event (spec: "Not sent: … campaign contacts never connected")', { timeout: 30_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Campaign dialer');
    const base = { agent_id: agentId, workspace_id: owner.workspaceId, user_id: owner.userId, direction: 'outbound' as const, status: 'ringing' as const, from_number: '+14155550111', to_number: '+14155550155', created_at_ms: clock.now() - 20_000 };
    const contact = { ...newCallRecord({ ...base, call_id: newId() }), campaign_id: newId() };
    const plain = newCallRecord({ ...base, call_id: newId() });
    await cp.webhooks.events.onCarrierCallEnded({ type: 'ended', call: contact, detail: 'no-answer' });
    await cp.webhooks.events.onCarrierCallEnded({ type: 'ended', call: plain, detail: 'no-answer' });
    // The plain call's event arrives; the contact's was never queued.
    await arrivalFor(plain.call_id);
    expect((await infra.sql`select count(*)::int as n from webhook_deliveries where call_id = ${contact.call_id}`)[0].n).toBe(0);
    expect((await infra.sql.unsafe(`select count(*)::int as n from ${cp.jobs.schema}.job where name = 'webhook.call-failed' and singleton_key = $1`, [contact.call_id]))[0].n).toBe(0);
  });

  it('answered, but its media never reached an engine: failed (media_not_connected); answered with a conversation: none from this hook', { timeout: 30_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Front desk');
    const base = { agent_id: agentId, workspace_id: owner.workspaceId, user_id: owner.userId, direction: 'inbound' as const, status: 'in_progress' as const, from_number: '+14155550133', to_number: '+14155550144', created_at_ms: clock.now() - 20_000 };
    const lost = { ...newCallRecord({ ...base, call_id: newId() }), answered_at_ms: clock.now() - 15_000 };
    // Recorded: the engine wrote its conversation (its own end sends call.completed, not this hook).
    const recorded = { ...newCallRecord({ ...base, call_id: newId() }), answered_at_ms: clock.now() - 15_000 };
    const sc = sessionConfig({ agent_id: agentId, workspace_id: owner.workspaceId });
    writer.recorderFor(sc).start({ session_id: sc.session_id, agent_id: agentId, workspace_id: owner.workspaceId, call_id: recorded.call_id, metadata: {}, started_at_ms: clock.now() - 15_000 });
    await writer.flush();
    await cp.webhooks.events.onCarrierCallEnded({ type: 'ended', call: recorded, detail: 'completed' });
    await cp.webhooks.events.onCarrierCallEnded({ type: 'ended', call: lost, detail: 'completed' });
    const got = await arrivalFor(lost.call_id);
    expect(verifySignature(secret, got)).toBe(true);
    expect(got.json.data).toMatchObject({ status: 'failed', failure_reason: 'media_not_connected', carrier_status: 'completed', direction: 'inbound', conversation_id: '', answered_at: null, analysis_status: 'skipped' });
    // The spec types conversation_id a string; answered_at is when media reached an engine: never here.
    // The recorded call's job ran too (same delay, queued first) and sent nothing.
    await expect.poll(async () => (await infra.sql.unsafe(`select count(*)::int as n from ${cp.jobs.schema}.job where name = 'webhook.call-failed' and singleton_key = $1 and state = 'completed'`, [recorded.call_id]))[0].n, { timeout: 10_000 }).toBe(1);
    expect((await infra.sql`select count(*)::int as n from webhook_deliveries where call_id = ${recorded.call_id}`)[0].n).toBe(0);
  });
});

describe('Connect (gRPC family) and WEBHOOKS_UNAVAILABLE', () => {
  it('GetWebhookSettings over Connect; a deployment with delivery off answers 503 WEBHOOKS_UNAVAILABLE to test and retry', { timeout: 30_000 }, async () => {
    const client = createClient(WebhookService, createConnectTransport({ baseUrl: `http://127.0.0.1:${cp.port}`, httpVersion: '2' }));
    const headers = { authorization: `Bearer ${owner.token}` };
    const s = await client.getWebhookSettings({ workspaceId: owner.workspaceId }, { headers });
    expect(s).toMatchObject({ webhookUrl: receiver.url, hasWebhookSecret: true });
    const err = await client.putWebhookSettings({ workspaceId: owner.workspaceId, webhookUrl: 'http://example.com/x' }, { headers }).catch((e: unknown) => e);
    expect((err as ConnectError).code).toBe(Code.InvalidArgument);

    const off = await startControlPlane({ ...infra, clock, config: { ...infra.config, webhooksEnabled: false } }, { port: 0, host: '127.0.0.1' });
    try {
      const r = await api(off, 'POST', TEST, { token: owner.token });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('WEBHOOKS_UNAVAILABLE');
      expect((await api(off, 'POST', `${D}/${newId()}/retry`, { token: owner.token })).body.error.code).toBe('WEBHOOKS_UNAVAILABLE');
      expect((await api(off, 'GET', S, { token: owner.token })).status).toBe(200);
    } finally {
      await off.close();
    }
  });
});
