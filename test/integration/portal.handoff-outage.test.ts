/**
 * Issue 21, a hand-off request lost with Redis: the control plane and the engine reach Redis
 * through a TCP proxy; with a live sim carrier call up, Redis is cut and the caller asks for a
 * person. The engine's bus notice cannot be sent, so it stores the request in Postgres
 * (`human_handoff_requests`); the presence sweep (a pg-boss job) queues the call's
 * `portal.handoff` job, which fails while the live call registry is unreachable and keeps the
 * request; once Redis is back the next pass offers the call to the person, who takes it, and the
 * request is gone.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from '../helpers/accounts.js';
import { TEST_REDIS_URL } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { presenceClient, type PresenceClient } from '../helpers/presence-client.js';

let proxy: TcpProxy;
let h: TelephonyHarness;
let panelAgent = '';
let login = '';

beforeAll(async () => {
  const target = new URL(TEST_REDIS_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 6379));
  h = await startTelephonyHarness({
    script: { rules: [{ when: 'person', toolCalls: [{ name: 'transfer_to_human', arguments: {} }], afterTool: 'Please stay on the line.' }] },
    env: { REDIS_URL: proxy.urlFor(TEST_REDIS_URL), PORTAL_SWEEP_INTERVAL_S: '1' },
    app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } },
  });
  panelAgent = await h.createAgent({ number: '+14155550951' });
  expect((await h.call('PUT', `/agents/${panelAgent}`, { allow_human_transfer: true })).status).toBe(200);
  expect((await h.call('PUT', `/agents/${panelAgent}/telephony`, { human_transfer_mode: 'panel' })).status).toBe(200);
  expect((await h.call('POST', `/agents/${panelAgent}/versions/publish`)).status).toBeLessThan(300);
  const code = `o-${randomBytes(4).toString('hex')}`;
  const created = await h.call('POST', '/call-center/agents', { workspace_id: h.user.workspaceId, display_name: 'Olle', agent_code: code });
  expect((await h.call('POST', '/agent-portal/admin/set-password', { agent_id: created.body.data.id, password: 'olle-password' })).status).toBe(200);
  login = (await api(h.app, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: h.user.workspaceId, agent_code: code, password: 'olle-password' } })).body.data.token;
}, 90_000);

afterAll(async () => {
  proxy?.restore();
  await h?.close();
  await proxy?.close();
});

const stored = async (callId: string) => (await h.infra.sql`select 1 from human_handoff_requests where call_id = ${callId}`).length > 0;

describe('a hand-off request while Redis is down', () => {
  it('is stored by the engine, retried by the sweep through the job queue, and offered once Redis is back', { timeout: 90_000 }, async () => {
    const presence = presenceClient(h.app.port);
    await presence.open();
    presence.send({ type: 'login', token: login });
    await presence.next('ready');

    h.callees.set('+14155559501', { dialDurationMs: 30_000 });
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: panelAgent, to_number: '+14155559501' });
    expect(res.status, JSON.stringify(res.body)).toBe(200);
    const callId = res.body.call_id as string;
    const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
    const media = await sim.mediaReady;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');

    proxy.reset();
    await media.say('I want to talk to a person');
    await media.waitUntil(() => media.heard.some((t) => /stay on the line/i.test(t)), 15_000, 'the hold line');
    await expect.poll(() => stored(callId), { timeout: 15_000, interval: 200 }).toBe(true);
    // The sweep's jobs run while the live call registry is unreachable: they fail and keep the request.
    await expect
      .poll(async () => (await h.infra.sql`select count(*)::int as n from ${h.infra.sql(h.app.jobs.schema)}.job where name = 'portal.handoff' and singleton_key = ${callId} and state = 'failed'`)[0]!.n, { timeout: 20_000, interval: 250 })
      .toBeGreaterThan(0);
    expect(await stored(callId)).toBe(true);
    expect((await h.infra.sql`select 1 from human_handoffs where call_id = ${callId}`).length).toBe(0);

    proxy.restore();
    // Heartbeats keep the person fresh (and repeat an open offer whose bus notice was lost).
    const beat = setInterval(() => presence.send({ type: 'heartbeat' }), 1000);
    try {
      const offer = await presence.next('offer');
      expect(offer.call_id).toBe(callId);
      presence.send({ type: 'offer.accept', offer_id: offer.offer_id });
      expect(await presence.next('call.connected')).toMatchObject({ call_id: callId });
    } finally {
      clearInterval(beat);
    }
    expect(await stored(callId)).toBe(false);
    presence.ws.close();
  });
});
