/**
 * Issue 21, hand-off to a person: a live sim carrier call of an agent with `allow_human_transfer`
 * and `human_transfer_mode: panel` is offered to the human agent connected over the presence
 * socket; on `offer.accept` the carrier dials the agent's client identity, the AI drops off, a
 * human segment of the same call starts, and the folded conversation reads `ai -> human`. With
 * nobody free the AI stays on the call (fallback). Non-panel agents are refused (409).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { parseTwiml } from '../carrier-sim/index.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from '../helpers/accounts.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { presenceClient, type PresenceClient } from '../helpers/presence-client.js';
import { ANALYSIS_HOLD_MS } from '../../control-plane/webhooks/events.js';
import type { JobContext } from '../../control-plane/jobs/index.js';

let h: TelephonyHarness;
let receiver: WebhookReceiver;
let panelAgent = '';
let phoneAgent = '';
let humanId = '';
let humanCode = '';
let nextNumber = 700;
const PANEL_NUMBER = '+14155550701';
const PHONE_NUMBER = '+14155550702';

beforeAll(async () => {
  // The caller asking for a person makes the sim LLM call the hand-off function.
  h = await startTelephonyHarness({
    script: { rules: [{ when: 'person', toolCalls: [{ name: 'transfer_to_human', arguments: {} }], afterTool: 'Please stay on the line.' }] },
    env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' },
    app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, postCallSweepMs: 500 },
  });
  receiver = await startWebhookReceiver();
  expect((await h.call('PUT', '/call-center/settings', { workspace_id: h.user.workspaceId, webhook_url: receiver.url })).status).toBe(200);
  panelAgent = await h.createAgent({ number: PANEL_NUMBER });
  expect((await h.call('PUT', `/agents/${panelAgent}`, { allow_human_transfer: true })).status).toBe(200);
  expect((await h.call('PUT', `/agents/${panelAgent}/telephony`, { human_transfer_mode: 'panel' })).status).toBe(200);
  expect((await h.call('POST', `/agents/${panelAgent}/versions/publish`)).status).toBeLessThan(300);
  phoneAgent = await h.createAgent({ number: PHONE_NUMBER });
  humanCode = `h-${randomBytes(4).toString('hex')}`;
  const created = await h.call('POST', '/call-center/agents', { workspace_id: h.user.workspaceId, display_name: 'Helga', agent_code: humanCode });
  expect(created.status).toBe(201);
  humanId = created.body.data.id;
  expect((await h.call('POST', '/agent-portal/admin/set-password', { agent_id: humanId, password: 'helga-password' })).status).toBe(200);
}, 90_000);

afterAll(async () => {
  await h?.close();
  await receiver?.close();
});

const callee = () => `+1415555${String(nextNumber++).padStart(4, '0')}`;

async function liveCall(agentId: string, dialDurationMs = 1500) {
  const to = callee();
  h.callees.set(to, { dialDurationMs });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  const media = await sim.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  return { body: res.body, sim, media };
}

/** Helga on a presence socket, `ready` read. */
async function helgaLoggedIn(): Promise<PresenceClient> {
  const login = await api(h.app, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: h.user.workspaceId, agent_code: humanCode, password: 'helga-password' } });
  expect(login.status).toBe(200);
  const c = presenceClient(h.app.port);
  await c.open();
  c.send({ type: 'login', token: login.body.data.token });
  expect((await c.next()).type).toBe('ready');
  return c;
}

describe('hand-off to a human agent', () => {
  it('refuses an agent that hands over by phone, and falls back when nobody is free', { timeout: 30_000 }, async () => {
    const phone = await liveCall(phoneAgent);
    const refused = await h.call('POST', `/call-center/calls/${phone.body.call_id}/handoff`);
    expect(refused.status).toBe(409);
    expect(refused.body.error.message).toContain('allow_human_transfer');
    phone.media.hangup();
    await phone.sim.ended;

    const { body, media, sim } = await liveCall(panelAgent);
    const r = await h.call('POST', `/call-center/calls/${body.call_id}/handoff`);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ status: 'no_agent_available' });
    expect(r.body.data.fallback_message).toMatch(/no one is available/);
    // The caller hears the fallback and the AI stays on the call.
    await media.waitUntil(() => media.heard.some((t) => /no one is available/i.test(t)), 10_000, 'the spoken fallback');
    expect(h.engine.calls.has(body.session_id)).toBe(true);
    media.hangup();
    await sim.ended;
  });

  it('the transfer_to_human function offers the call over the presence socket; on accept the carrier dials the person and the call folds as ai -> human', { timeout: 45_000 }, async () => {
    const c = await helgaLoggedIn();

    const { body, sim, media } = await liveCall(panelAgent);
    await media.say('I want to talk to a person');
    const offer = await c.next();
    expect(offer).toMatchObject({ type: 'offer', call_id: body.call_id, ai_agent: { id: panelAgent } });
    await media.waitUntil(() => media.heard.some((t) => /stay on the line/i.test(t)), 10_000, 'the hold line');
    // A second request for the same call while the offer is out is refused.
    expect((await h.call('POST', `/call-center/calls/${body.call_id}/handoff`)).status).toBe(409);

    c.send({ type: 'offer.accept', offer_id: offer.offer_id });
    const connected = await c.next();
    expect(connected).toMatchObject({ type: 'call.connected', call_id: body.call_id });
    // The carrier dials the person's client identity; the AI's stream stops and its session ends.
    await media.closed();
    const dial = parseTwiml(sim.twiml.at(-1)!).children[0]!;
    expect(dial.name).toBe('Dial');
    expect(dial.children.find((x) => x.name === 'Client')?.text).toBe(`human-${humanId}`);
    const realtime = async () =>
      (await h.call('GET', `/agent-portal/admin/presence/realtime?workspace_id=${h.user.workspaceId}`)).body.data.find((x: { id: string }) => x.id === humanId).status;
    expect(await realtime()).toBe('on_call');

    // The person's leg ends at the carrier: the human segment completes and the agent wraps up.
    expect(await sim.ended).toBe('completed');
    await expect.poll(realtime, { timeout: 10_000, interval: 100 }).toBe('wrap_up');
    const human = await h.call('GET', `/conversations/${connected.conversation_id}`);
    expect(human.body.data.conversation).toMatchObject({ status: 'completed' });
    await expect
      .poll(async () => (await h.call('GET', `/conversations?agent_id=${panelAgent}`)).body.data.find((x: { call_id?: string }) => x.call_id === body.call_id)?.segment_pattern, {
        timeout: 15_000,
        interval: 200,
      })
      .toBe('ai -> human');
    // call.completed names the person and both segments.
    await expect.poll(() => receiver.requests.some((x) => x.json?.data?.call_id === body.call_id), { timeout: 30_000, interval: 200 }).toBe(true);
    const ev = receiver.requests.find((x) => x.json?.data?.call_id === body.call_id)!.json.data;
    expect(ev.segments.map((x: { handler: string }) => x.handler)).toEqual(['ai', 'human']);
    expect(ev.segments[1]).toMatchObject({ human_agent_id: humanId, conversation_id: connected.conversation_id });
    expect(ev.human_agents).toEqual([expect.objectContaining({ id: humanId, name: 'Helga' })]);
    c.ws.close();
  });

  it('call.end from the person hangs the carrier call up (caller and person were left connected after the record said it was over)', { timeout: 45_000 }, async () => {
    const c = await helgaLoggedIn();
    // The person's leg would last a minute.
    const { body, sim, media } = await liveCall(panelAgent, 60_000);
    await media.say('I want to talk to a person');
    const offer = await c.next('offer');
    c.send({ type: 'offer.accept', offer_id: offer.offer_id });
    expect(await c.next('call.connected')).toMatchObject({ call_id: body.call_id });
    await media.closed();
    // The AI's stint ended longer ago than the analysis hold while the person is still on the
    // call: the event waits for the person's segment (it shipped without it, as soon as the hold ran out).
    await expect
      .poll(async () => (await h.infra.sql`select 1 from conversations where call_id = ${body.call_id} and segment_kind = 'ai' and ended_at is not null`).length, { timeout: 10_000, interval: 100 })
      .toBe(1);
    await h.infra.sql`update conversations set ended_at = ended_at - ${`${ANALYSIS_HOLD_MS / 1000 + 10} seconds`}::interval where call_id = ${body.call_id} and segment_kind = 'ai'`;
    const callKey = `${h.user.workspaceId}:${body.call_id}`;
    await h.app.webhooks.events.run({ id: 'probe', name: 'webhook.call-completed', data: { call_key: callKey }, retryCount: 0, retryLimit: 0, isLastAttempt: true } as JobContext<'webhook.call-completed'>);
    expect(await h.infra.sql`select 1 from webhook_deliveries where call_id = ${body.call_id}`).toHaveLength(0);
    c.send({ type: 'call.end', call_id: body.call_id });
    expect(await c.next('call.ended')).toMatchObject({ call_id: body.call_id });
    const ended = await Promise.race([sim.ended, new Promise((r) => setTimeout(() => r('still connected'), 10_000))]);
    expect(ended).toBe('completed');
    c.ws.close();
  });

  it('concurrent hand-off requests for one call: one offer, the others 409 (they were 500); a caller who hangs up voids the open offer', { timeout: 45_000 }, async () => {
    const c = await helgaLoggedIn();
    const { body } = await liveCall(panelAgent);
    const tries = await Promise.all([1, 2, 3].map(() => h.call('POST', `/call-center/calls/${body.call_id}/handoff`)));
    expect(tries.map((r) => r.status).sort()).toEqual([200, 409, 409]);
    await c.next('offer');
    // The caller hangs up while the offer is out: it is void, so its expiry offers the dead call to nobody.
    expect((await h.call('POST', `/telephony/calls/${body.call_id}/end`)).status).toBe(200);
    await expect
      .poll(async () => (await h.infra.sql<{ status: string }[]>`select status from human_handoffs where call_id = ${body.call_id}`).map((r) => r.status), { timeout: 10_000, interval: 100 })
      .toEqual(['ended']);
    await h.infra.sql`update human_handoffs set expires_at = now() - interval '1 second' where call_id = ${body.call_id}`;
    expect(await h.app.portal.handoff.expireOffers()).toBe(0);
    c.ws.close();
  });

  it('a cold transfer to a number: call.completed waits for the transferred leg, and its ended_at and duration cover it', { timeout: 60_000 }, async () => {
    const { body, sim } = await liveCall(phoneAgent, 4000);
    expect((await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' })).status).toBe(200);
    expect(await sim.ended).toBe('completed');
    const legEndedAt = Date.now();
    await expect.poll(() => receiver.requests.some((x) => x.json?.data?.call_id === body.call_id), { timeout: 45_000, interval: 200 }).toBe(true);
    const got = receiver.requests.find((x) => x.json?.data?.call_id === body.call_id)!;
    const ev = got.json.data;
    // The AI dropped off ~4 s before the leg ended: the event's end is the carrier call's.
    expect(Date.parse(ev.ended_at)).toBeGreaterThan(legEndedAt - 1500);
    expect(ev.duration_ms).toBeGreaterThanOrEqual(4000);
  });

  it('a transferred leg that outlasts the analysis hold still holds call.completed until the carrier call ends', { timeout: 60_000 }, async () => {
    const { body, sim } = await liveCall(phoneAgent, 12_000);
    expect((await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559998' })).status).toBe(200);
    // The AI's stint ended more than the analysis hold ago while the transferred leg is still up.
    await expect
      .poll(async () => (await h.infra.sql`select 1 from conversations where call_id = ${body.call_id} and ended_at is not null`).length, { timeout: 10_000, interval: 100 })
      .toBe(1);
    await h.infra.sql`update conversations set ended_at = ended_at - ${`${ANALYSIS_HOLD_MS / 1000 + 10} seconds`}::interval where call_id = ${body.call_id}`;
    expect(await sim.ended).toBe('completed');
    const legEndedAt = Date.now();
    await expect.poll(() => receiver.requests.some((x) => x.json?.data?.call_id === body.call_id), { timeout: 45_000, interval: 200 }).toBe(true);
    const got = receiver.requests.find((x) => x.json?.data?.call_id === body.call_id)!;
    expect(got.receivedAt).toBeGreaterThan(legEndedAt - 1000);
    expect(Date.parse(got.json.data.ended_at)).toBeGreaterThan(legEndedAt - 1500);
  });
});
