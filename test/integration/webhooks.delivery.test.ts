/**
 * Issue 14, "Webhooks" and "Done means": the whole control plane (startControlPlane) against a
 * local https receiver with a self-signed certificate trusted through NODE_EXTRA_CA_CERTS
 * (test/helpers/dev-tls.global.ts), loopback allowed through OUTBOUND_ALLOW_CIDRS.
 *
 * The schedule is driven by the injected clock, never by sleeping: the control plane's clock
 * starts two hours behind real time, so pg-boss releases every job at once, and the delivery
 * worker makes each attempt only when the injected clock reaches its `next_attempt_at`. The test
 * moves the clock to the due time and awaits the receiver's next request.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { createConversationWriter, type ConversationWriter } from '../../media-engine/records/writer.js';
import { newId } from '../../shared/ids.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { MAX_IN_FLIGHT_PER_WORKSPACE } from '../../control-plane/webhooks/deliver.js';
import { createAgent, offsetClock } from '../unit/records/control-plane.js';
import { endRecord, turnRecord } from '../unit/records/fixtures.js';

const S = '/api/v1/call-center/settings';
const D = '/api/v1/call-center/webhooks/deliveries';
const TEST = '/api/v1/call-center/webhooks/test';
/** Jitter pinned at 0.5 -> +10 %: 30 s -> 33 s, 2 min -> 132 s. */
const JITTER = 0.5;

let infra: TestInfra;
let cp: ControlPlane;
let owner: TestUser;
let member: TestUser;
let stranger: TestUser;
let receiver: WebhookReceiver;
let secret: string;
let writer: ConversationWriter;
const clock = offsetClock();

beforeAll(async () => {
  expect(devTlsTrusted(), 'vitest globalSetup must trust the development certificate').toBe(true);
  clock.advance(-2 * 3600_000);
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'] });
  cp = await startControlPlane(
    { ...infra, clock },
    {
      port: 0,
      host: '127.0.0.1',
      jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 },
      postCallSweepMs: 500,
      webhookJitter: () => JITTER,
    },
  );
  owner = await createTestUser(cp);
  member = await createTestUser(cp);
  stranger = await createTestUser(cp);
  const add = await api(cp, 'POST', `/api/v1/auth/workspaces/${owner.workspaceId}/members`, { token: owner.token, body: { email: member.email, role: 'member' } });
  expect(add.status, JSON.stringify(add.body)).toBe(201);
  receiver = await startWebhookReceiver();
  const put = await api(cp, 'PUT', S, { token: owner.token, body: { workspace_id: owner.workspaceId, webhook_url: receiver.url } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  expect(put.body.data).toMatchObject({ webhook_url: receiver.url, has_webhook_secret: true });
  secret = put.body.data.webhook_secret;
  expect(secret).toMatch(/^whsec_/);
  writer = createConversationWriter({ sql: infra.sql, logger: infra.logger, clock, flushMs: 10 });
});

afterAll(async () => {
  await writer?.close();
  await cp?.close();
  await receiver?.close();
  await infra?.close();
});

const get = (u: TestUser, path: string) => api(cp, 'GET', path, { token: u.token });
const post = (u: TestUser, path: string, body?: unknown) => api(cp, 'POST', path, { token: u.token, body });
const ws = () => `workspace_id=${owner.workspaceId}`;

async function delivery(id: string) {
  const r = await get(owner, `${D}/${id}?${ws()}`);
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

/** Awaits the delivery's state after an attempt (the worker writes it just after the response). */
async function settled(id: string, attempts: number, status: string) {
  await expect.poll(async () => (await delivery(id)).attempt_log.length, { timeout: 10_000, interval: 50 }).toBe(attempts);
  await expect.poll(async () => (await delivery(id)).status, { timeout: 10_000, interval: 50 }).toBe(status);
  return delivery(id);
}

async function ping(): Promise<string> {
  const r = await post(owner, `${TEST}?${ws()}`);
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  return r.body.data.delivery_id;
}

describe('500 twice then 200 -> three attempts, one delivered event, same id and bytes; signatures verify', () => {
  it('retries on the injected clock: 30 s then 2 min (+ jitter)', { timeout: 40_000 }, async () => {
    const before = receiver.requests.length;
    receiver.respond({ status: 500, body: 'boom' }, { status: 500, body: 'boom again' });
    const id = await ping();
    const first = await receiver.until(before + 1);
    let d = await settled(id, 1, 'pending');
    expect(d.attempt_log[0]).toMatchObject({ n: 1, status_code: 500, response_excerpt: 'boom' });
    const wait1 = Date.parse(d.next_attempt_at) - Date.parse(d.attempt_log[0].started_at);
    expect(wait1).toBeGreaterThanOrEqual(33_000);
    expect(wait1).toBeLessThan(33_000 + 2000);
    // Not due on the injected clock: nothing is sent while it stands still (several polling cycles).
    await new Promise((r) => setTimeout(r, 1500));
    expect(receiver.requests.length).toBe(before + 1);
    clock.advance(wait1);
    const second = await receiver.until(before + 2);
    d = await settled(id, 2, 'pending');
    const wait2 = Date.parse(d.next_attempt_at) - Date.parse(d.attempt_log[1].started_at);
    expect(wait2).toBeGreaterThanOrEqual(132_000);
    expect(wait2).toBeLessThan(132_000 + 2000);
    clock.advance(wait2);
    const third = await receiver.until(before + 3);
    d = await settled(id, 3, 'delivered');
    expect(d.attempt_log.map((a: any) => a.status_code)).toEqual([500, 500, 200]);
    // Every attempt has every field: an answer without an error has `error: null`.
    expect(d.attempt_log[2]).toMatchObject({ error: null, status_code: 200 });
    for (const a of d.attempt_log) expect(Object.keys(a).sort()).toEqual(['error', 'latency_ms', 'n', 'response_excerpt', 'started_at', 'status_code']);
    for (const r of [first, second, third]) {
      expect(verifySignature(secret, r)).toBe(true);
      expect(r.headers['webhook-id']).toBe(first.json.id);
      expect(r.headers['idempotency-key']).toBe(first.json.id);
      expect(r.headers['webhook-event-type']).toBe('call.completed');
      expect(r.raw.equals(first.raw)).toBe(true);
    }
    expect(first.json).toMatchObject({ type: 'call.completed', test: true, workspace_id: owner.workspaceId });
    expect(d.body).toBe(first.raw.toString('utf8'));
    expect(verifySignature('whsec_wrong', first)).toBe(false);
  });
});

describe('410 -> dead at once; a manual retry re-sends the identical body', () => {
  it('dead after one attempt, retry delivers the same bytes with the same id', { timeout: 30_000 }, async () => {
    const before = receiver.requests.length;
    receiver.respond({ status: 410, body: 'gone' });
    const id = await ping();
    const first = await receiver.until(before + 1);
    const d = await settled(id, 1, 'dead');
    expect(d).toMatchObject({ last_status_code: 410 });
    expect(d.next_attempt_at).toBeNull();
    // Only owner/admin may retry; only a dead delivery can be retried.
    expect((await post(member, `${D}/${id}/retry?${ws()}`)).status).toBe(403);
    const retry = await post(owner, `${D}/${id}/retry?${ws()}`);
    expect(retry.status, JSON.stringify(retry.body)).toBe(202);
    // The delivery as GET shows it: unset fields null, not absent (the attempt got no status code).
    expect(retry.body.data).toMatchObject({ id, call_id: null, delivered_at: null });
    expect(retry.body.data.attempt_log[0]).toMatchObject({ n: 1, status_code: 410, error: null });
    const again = await receiver.until(before + 2);
    await settled(id, 2, 'delivered');
    expect(again.raw.equals(first.raw)).toBe(true);
    expect(again.headers['webhook-id']).toBe(first.headers['webhook-id']);
    expect(verifySignature(secret, again)).toBe(true);
    expect((await post(owner, `${D}/${id}/retry?${ws()}`)).status).toBe(409);
  });
});

describe('429 with Retry-After -> the header overrides the schedule', () => {
  it('waits exactly Retry-After (120 s) on the injected clock', { timeout: 30_000 }, async () => {
    const before = receiver.requests.length;
    receiver.respond({ status: 429, headers: { 'retry-after': '120' } });
    const id = await ping();
    await receiver.until(before + 1);
    const d = await settled(id, 1, 'pending');
    const wait = Date.parse(d.next_attempt_at) - Date.parse(d.attempt_log[0].started_at);
    expect(wait).toBeGreaterThanOrEqual(120_000);
    expect(wait).toBeLessThan(120_000 + 2000);
    clock.advance(wait);
    await receiver.until(before + 2);
    await settled(id, 2, 'delivered');
  });
});

describe('the endpoint goes away and comes back -> queued events drain', () => {
  it('connection failures retry; every queued event is delivered after recovery', { timeout: 40_000 }, async () => {
    await receiver.stop();
    const before = receiver.requests.length;
    const ids = [await ping(), await ping()];
    for (const id of ids) {
      const d = await settled(id, 1, 'pending');
      expect(d.attempt_log[0].status_code).toBeNull();
      expect(d.attempt_log[0].error).toBeTruthy();
    }
    await receiver.start();
    clock.advance(40_000);
    await receiver.until(before + 2);
    for (const id of ids) await settled(id, 2, 'delivered');
    expect(new Set(receiver.requests.slice(before).map((r) => r.headers['webhook-id'])).size).toBe(2);
  });
});

describe('one workspace whose receiver hangs', () => {
  it(`holds at most ${MAX_IN_FLIGHT_PER_WORKSPACE} attempts; another workspace's event goes out meanwhile`, { timeout: 40_000 }, async () => {
    const hungReceiver = await startWebhookReceiver();
    const okReceiver = await startWebhookReceiver();
    try {
      const hung = await createTestUser(cp);
      const ok = await createTestUser(cp);
      for (const [u, r] of [[hung, hungReceiver], [ok, okReceiver]] as const) {
        const put = await api(cp, 'PUT', S, { token: u.token, body: { workspace_id: u.workspaceId, webhook_url: r.url } });
        expect(put.status, JSON.stringify(put.body)).toBe(200);
      }
      const release = hungReceiver.hold();
      try {
        for (let i = 0; i < 5; i++) expect((await post(hung, `${TEST}?workspace_id=${hung.workspaceId}`)).status).toBe(202);
        await expect.poll(() => hungReceiver.held, { timeout: 10_000, interval: 50 }).toBe(MAX_IN_FLIGHT_PER_WORKSPACE);
        expect((await post(ok, `${TEST}?workspace_id=${ok.workspaceId}`)).status).toBe(202);
        const t = performance.now();
        await okReceiver.until(1);
        expect(performance.now() - t).toBeLessThan(5000);
        expect(hungReceiver.held).toBe(MAX_IN_FLIGHT_PER_WORKSPACE);
      } finally {
        release();
      }
      // Released: the rest of the hung workspace's events follow.
      await expect.poll(() => new Set(hungReceiver.requests.map((r) => r.headers['webhook-id'])).size, { timeout: 20_000, interval: 100 }).toBe(5);
    } finally {
      await hungReceiver.close();
      await okReceiver.close();
    }
  });
});

describe('call.completed for a carrier call the engine ended', () => {
  it('one signed event per call with every field; a browser session gets none', { timeout: 30_000 }, async () => {
    const agentId = await createAgent(cp as never, infra, owner, owner.workspaceId, 'Front desk');
    const callId = newId();
    const t0 = clock.now();
    const browserSc = sessionConfig({ agent_id: agentId, workspace_id: owner.workspaceId });
    const browser = writer.recorderFor(browserSc);
    browser.start({ session_id: browserSc.session_id, agent_id: agentId, workspace_id: owner.workspaceId, metadata: {}, started_at_ms: t0 });
    browser.end(endRecord(0, t0));
    const sc = sessionConfig({ agent_id: agentId, workspace_id: owner.workspaceId });
    const rec = writer.recorderFor(sc);
    const before = receiver.requests.length;
    rec.start({
      session_id: sc.session_id,
      agent_id: agentId,
      workspace_id: owner.workspaceId,
      call_id: callId,
      // Telephony stamps when it took the call: 8 s of ringing before the media connected at t0.
      metadata: { call_direction: 'inbound', call_started_at: new Date(t0 - 8000).toISOString(), session_metadata: { from_number: '+14155550100', to_number: '+14155550199' } },
      started_at_ms: t0,
    });
    rec.turn(turnRecord(1, { startedAtMs: t0 + 1000 }));
    rec.end(endRecord(1, t0));
    await writer.flush();
    const got = await receiver.until(before + 1);
    expect(verifySignature(secret, got)).toBe(true);
    expect(got.json).toMatchObject({
      type: 'call.completed',
      test: false,
      workspace_id: owner.workspaceId,
      data: {
        call_id: callId,
        conversation_id: rec.conversationId,
        conversation_ids: [rec.conversationId],
        status: 'completed',
        direction: 'inbound',
        caller_number: '+14155550100',
        callee_number: '+14155550199',
        ai_agent: { id: agentId, name: 'Front desk' },
        human_agents: [],
        segments: [{ n: 1, handler: 'ai', conversation_id: rec.conversationId, human_agent_id: null }],
        disposition: null,
        summary: null,
        qa_score: null,
        analysis_status: 'timeout',
        transcript_url: null,
        recordings: [],
        started_at: new Date(t0 - 8000).toISOString(),
        answered_at: new Date(t0).toISOString(),
        duration_ms: 12_345 + 8000,
      },
    });
    for (const k of ['caller_name', 'ended_at', 'talk_duration_ms']) expect(got.json.data).toHaveProperty(k);
    expect(got.json.id).toBe(got.headers['webhook-id']);
    const list = await get(owner, `${D}?${ws()}&status=delivered&limit=200`);
    await expect.poll(async () => (await get(owner, `${D}?${ws()}&status=delivered&limit=200`)).body.data.filter((x: any) => x.call_id === callId).length, { timeout: 10_000, interval: 50 }).toBe(1);
    expect(list.body.meta).toMatchObject({ page: 1, per_page: 200 });
    // The browser session (no call_id) produced nothing: only the call's event arrived.
    expect(receiver.requests.slice(before).filter((r) => r.json?.test === false)).toHaveLength(1);
  });
});

describe('settings: bad input, roles, fencing, secret rotation', () => {
  it('non-https, private or unresolvable URLs are 400 naming webhook_url', { timeout: 20_000 }, async () => {
    for (const url of ['http://127.0.0.1:9/hook', 'https://10.0.0.7/hook', 'https://192.168.1.20/hook', 'https://no-such-host.invalid/hook', 'not a url']) {
      const r = await api(cp, 'PUT', S, { token: owner.token, body: { workspace_id: owner.workspaceId, webhook_url: url } });
      expect(r.status, url).toBe(400);
      expect(r.body.error.details?.[0]?.field ?? r.body.error.message, url).toContain('webhook_url');
    }
  });

  it('members read, only owner/admin write or test (403); other organizations\' workspaces are 403 too', async () => {
    const read = await get(member, `${S}?${ws()}`);
    expect(read.status).toBe(200);
    expect(read.body.data).toEqual({ workspace_id: owner.workspaceId, webhook_url: receiver.url, has_webhook_secret: true, carriers: {} });
    expect((await api(cp, 'PUT', S, { token: member.token, body: { workspace_id: owner.workspaceId, rotate_webhook_secret: true } })).status).toBe(403);
    expect((await post(member, `${TEST}?${ws()}`)).status).toBe(403);
    expect((await get(member, `${D}?${ws()}`)).status).toBe(200);
    // Another organization's workspace: 403 FORBIDDEN (spec doc 3's error table).
    for (const res of [await get(stranger, `${S}?${ws()}`), await get(stranger, `${D}?${ws()}`), await post(stranger, `${TEST}?${ws()}`)]) {
      expect([res.status, res.body.error?.code]).toEqual([403, 'FORBIDDEN']);
    }
    expect((await get(owner, `${D}?${ws()}&status=nope`)).status).toBe(400);
  });

  it('rotating returns a new secret once; the old one no longer verifies', { timeout: 20_000 }, async () => {
    const r = await api(cp, 'PUT', S, { token: owner.token, body: { workspace_id: owner.workspaceId, rotate_webhook_secret: true } });
    expect(r.status).toBe(200);
    const next = r.body.data.webhook_secret;
    expect(next).toMatch(/^whsec_/);
    expect(next).not.toBe(secret);
    expect((await get(owner, `${S}?${ws()}`)).body.data).not.toHaveProperty('webhook_secret');
    const before = receiver.requests.length;
    await ping();
    const got = await receiver.until(before + 1);
    expect(verifySignature(next, got)).toBe(true);
    expect(verifySignature(secret, got)).toBe(false);
    // Shown once to the client, never written to the logs.
    expect(infra.logLines.join('\n')).not.toContain(next);
    secret = next;
  });
});
