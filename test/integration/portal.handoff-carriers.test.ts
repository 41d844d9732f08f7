/**
 * Hand-off to a person beyond Twilio (issue 21 on issue 24's carriers), end to end against the
 * carrier simulators: on Vonage the accepted offer transfers the call to an NCCO connecting the
 * person (a Client SDK user `human-<agent id>`), the AI's websocket closes, the call folds as
 * `ai -> human` and the person's segment ends with the call; on Plivo the A leg is redirected to
 * `<Dial><User>` of the person's SIP endpoint. On Exotel, which cannot dial a person,
 * nobody is offered the call: the caller hears the spoken fallback and the AI stays (a REST request
 * is refused with 409 naming the carrier). The Twilio scenario is portal.handoff.test.ts.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { StreamCarrierSim } from '../carrier-sim/stream-carrier.js';
import { accountFor } from '../carrier-sim/stream-suite.js';
import { api } from '../helpers/accounts.js';
import { presenceClient, type PresenceClient } from '../helpers/presence-client.js';

let h: TelephonyHarness;
let vonage: StreamCarrierSim;
let exotel: StreamCarrierSim;
let plivo: StreamCarrierSim;
let agentId = '';
let humanId = '';
let humanCode = '';
let nextNumber = 800;
const NUMBER = '+14155550801';

beforeAll(async () => {
  const v = accountFor('vonage');
  const e = accountFor('exotel');
  const p = accountFor('plivo');
  vonage = new StreamCarrierSim({ wire: 'vonage', account: v.account });
  exotel = new StreamCarrierSim({ wire: 'exotel', account: e.account });
  plivo = new StreamCarrierSim({ wire: 'plivo', account: p.account });
  await vonage.start();
  await exotel.start();
  await plivo.start();
  // Both carriers' accounts are the deployment's; each call names its carrier (telephony_provider).
  h = await startTelephonyHarness({
    script: { rules: [{ when: 'person', toolCalls: [{ name: 'transfer_to_human', arguments: {} }], afterTool: 'Please stay on the line.' }] },
    env: { ...v.env(vonage.url), ...e.env(exotel.url), ...p.env(plivo.url) },
    app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } },
  });
  agentId = await h.createAgent({ number: NUMBER, withAccount: false });
  expect((await h.call('PUT', `/agents/${agentId}`, { allow_human_transfer: true })).status).toBe(200);
  expect((await h.call('PUT', `/agents/${agentId}/telephony`, { human_transfer_mode: 'panel' })).status).toBe(200);
  expect((await h.call('POST', `/agents/${agentId}/versions/publish`)).status).toBeLessThan(300);
  humanCode = `h-${randomBytes(4).toString('hex')}`;
  const created = await h.call('POST', '/call-center/agents', { workspace_id: h.user.workspaceId, display_name: 'Vera', agent_code: humanCode });
  expect(created.status).toBe(201);
  humanId = created.body.data.id;
  expect((await h.call('POST', '/agent-portal/admin/set-password', { agent_id: humanId, password: 'vera-password' })).status).toBe(200);
}, 90_000);

afterAll(async () => {
  await vonage?.close();
  await exotel?.close();
  await plivo?.close();
  await h?.close();
});

const callee = () => `+1415555${String(nextNumber++).padStart(4, '0')}`;

async function liveCall(sim: StreamCarrierSim, carrier: 'vonage' | 'exotel' | 'plivo') {
  const to = callee();
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to, telephony_provider: carrier });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const call = await sim.waitForCall((c) => c.to === to || c.from === to);
  const media = await call.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  return { body: res.body, call, media };
}

describe('hand-off to a person on other carriers', () => {
  let c: PresenceClient;

  beforeAll(async () => {
    const login = await api(h.app, 'POST', '/api/v1/agent-portal/login', { body: { workspace_id: h.user.workspaceId, agent_code: humanCode, password: 'vera-password' } });
    expect(login.status).toBe(200);
    c = presenceClient(h.app.port);
    await c.open();
    c.send({ type: 'login', token: login.body.data.token });
    expect((await c.next()).type).toBe('ready');
  });

  afterAll(() => c?.ws.close());

  it('Exotel cannot: nobody is offered the call, the caller hears the fallback, the AI stays', { timeout: 45_000 }, async () => {
    const { body, call, media } = await liveCall(exotel, 'exotel');
    expect(body.telephony_provider).toBe('exotel');
    const rest = await h.call('POST', `/call-center/calls/${body.call_id}/handoff`);
    expect(rest.status).toBe(409);
    expect(rest.body.error.message).toBe('the call cannot be handed to a person: exotel cannot hand a call to a person (docs/telephony.md, "Hand-off to a person")');

    await media.say('I want to talk to a person');
    await media.waitUntil(() => media.heard.some((t) => /no one is available/i.test(t)), 15_000, 'the spoken fallback');
    // Its last sentence too: a phrase said over the fallback could be taken as a barge-in on it.
    await media.waitUntil(() => media.heard.some((t) => /try again later/i.test(t)), 15_000, 'the end of the fallback');
    // The AI is still there: the next turn is answered, the stream is open, the call not transferred.
    expect(h.engine.calls.has(body.session_id)).toBe(true);
    await media.say('never mind');
    await media.waitUntil(() => media.heard.some((t) => /never mind/i.test(t)), 15_000, 'the AI answers on');
    expect(call.transferredTo).toBeUndefined();
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).body.status).toBe('in_progress');
    // The person available all along was never offered it.
    c.send({ type: 'heartbeat' });
    const ack = await c.next();
    expect(ack.type).not.toBe('offer');
    expect(c.queued().filter((m) => m.type === 'offer')).toEqual([]);
    await h.call('POST', `/telephony/calls/${body.call_id}/end`);
    expect(await call.ended).toBe('completed');
  });

  it('Vonage: the accepted offer connects the person (app user human-<id>); the AI drops off; the call folds as ai -> human', { timeout: 60_000 }, async () => {
    const { body, call, media } = await liveCall(vonage, 'vonage');
    await media.say('I want to talk to a person');
    const offer = await c.next('offer');
    expect(offer).toMatchObject({ type: 'offer', call_id: body.call_id, ai_agent: { id: agentId } });
    await media.waitUntil(() => media.heard.some((t) => /stay on the line/i.test(t)), 10_000, 'the hold line');

    c.send({ type: 'offer.accept', offer_id: offer.offer_id });
    const connected = await c.next('call.connected');
    expect(connected).toMatchObject({ call_id: body.call_id });
    // Vonage ran the transfer NCCO: the websocket leg closed, the person's app user was dialled.
    await media.closed();
    await expect.poll(() => call.transferredTo, { timeout: 5000 }).toBe(`app:human-${humanId}`);
    const put = vonage.requests.find((r) => r.method === 'PUT' && (r.body as { action?: string }).action === 'transfer')!;
    // The person's leg is recorded (two channels, WAV) before the connect.
    expect((put.body as any).destination.ncco.map((a: { action: string }) => a.action)).toEqual(['record', 'connect']);
    expect((put.body as any).destination.ncco[1]).toMatchObject({ action: 'connect', from: NUMBER.slice(1), endpoint: [{ type: 'app', user: `human-${humanId}` }] });
    await expect.poll(() => h.engine.calls.has(body.session_id), { timeout: 5000 }).toBe(false);

    // The person's leg ends, then the call: the human segment completes and the agent wraps up.
    expect(await call.ended).toBe('completed');
    const realtime = async () =>
      (await h.call('GET', `/agent-portal/admin/presence/realtime?workspace_id=${h.user.workspaceId}`)).body.data.find((x: { id: string }) => x.id === humanId).status;
    await expect.poll(realtime, { timeout: 10_000, interval: 100 }).toBe('wrap_up');
    const human = await h.call('GET', `/conversations/${connected.conversation_id}`);
    expect(human.body.data.conversation).toMatchObject({ status: 'completed' });
    await expect
      .poll(async () => (await h.call('GET', `/conversations?agent_id=${agentId}`)).body.data.find((x: { call_id?: string }) => x.call_id === body.call_id)?.segment_pattern, { timeout: 15_000, interval: 200 })
      .toBe('ai -> human');
  });
  it('Plivo: the accepted offer redirects the A leg to <Dial><User> of the person\'s SIP endpoint; the AI drops off', { timeout: 60_000 }, async () => {
    // Back from wrap-up (the Vonage call): available for the next offer.
    c.send({ type: 'status', status: 'available' });
    await c.next('status');
    const { body, call, media } = await liveCall(plivo, 'plivo');
    await media.say('I want to talk to a person');
    const offer = await c.next('offer');
    expect(offer).toMatchObject({ call_id: body.call_id });
    c.send({ type: 'offer.accept', offer_id: offer.offer_id });
    expect(await c.next('call.connected')).toMatchObject({ call_id: body.call_id });
    await media.closed();
    await expect.poll(() => call.transferredTo, { timeout: 5000 }).toBe(`sip:human-${humanId}@phone.plivo.com`);
    const redirect = plivo.requests.find((r) => r.method === 'POST' && typeof (r.body as { aleg_url?: string }).aleg_url === 'string')!;
    expect(new URL((redirect.body as { aleg_url: string }).aleg_url).searchParams.get('doc')).toBe('person');
    expect(call.docs.at(-1)).toContain(`<User>sip:human-${humanId}@phone.plivo.com</User>`);
    await expect.poll(() => h.engine.calls.has(body.session_id), { timeout: 5000 }).toBe(false);
    expect(await call.ended).toBe('completed');
  });
});
