/**
 * Issue 21, hand-off routing by `max_concurrent_calls`: a person with N = 2 is offered a second
 * call while connected to one, not a third; ending one call keeps them `on_call` while the other
 * lasts; a person who set `on_call` themselves (no call of ours) is not offered calls.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from '../helpers/accounts.js';
import { humanOnPresence, type PresenceClient } from '../helpers/presence-client.js';

let h: TelephonyHarness;
let panelAgent = '';
let humanId = '';
let nextNumber = 900;
let presence: PresenceClient;

beforeAll(async () => {
  h = await startTelephonyHarness({ app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 } } });
  panelAgent = await h.createAgent({ number: '+14155550901' });
  expect((await h.call('PUT', `/agents/${panelAgent}`, { allow_human_transfer: true })).status).toBe(200);
  expect((await h.call('PUT', `/agents/${panelAgent}/telephony`, { human_transfer_mode: 'panel' })).status).toBe(200);
  expect((await h.call('POST', `/agents/${panelAgent}/versions/publish`)).status).toBeLessThan(300);
  ({ humanId, presence } = await humanOnPresence(h, { displayName: 'Cato', maxConcurrentCalls: 2 }));
}, 90_000);

afterAll(async () => {
  presence?.ws.close();
  await h?.close();
});

async function liveCall() {
  const to = `+1415555${String(nextNumber++).padStart(4, '0')}`;
  // The person's leg lasts long enough for the whole test.
  h.callees.set(to, { dialDurationMs: 30_000 });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: panelAgent, to_number: to });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  const media = await sim.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  return { callId: res.body.call_id as string, media };
}

const status = async () => (await h.infra.sql<{ status: string }[]>`select status from human_agents where id = ${humanId}`)[0]!.status;
const handoff = async (callId: string) => (await h.call('POST', `/call-center/calls/${callId}/handoff`)).body.data;

async function offeredAndAccepted(callId: string) {
  expect(await handoff(callId)).toMatchObject({ status: 'offered', human_agent_id: humanId });
  const offer = await presence.next('offer');
  expect(offer.call_id).toBe(callId);
  presence.send({ type: 'offer.accept', offer_id: offer.offer_id });
  expect(await presence.next('call.connected')).toMatchObject({ call_id: callId });
}

describe('max_concurrent_calls', () => {
  it('offers up to N calls to one person, keeps them on_call while one lasts, and never offers to a self-declared on_call', { timeout: 60_000 }, async () => {
    const a = await liveCall();
    // Their own `on_call` (no call of ours): not free.
    presence.send({ type: 'status', status: 'on_call' });
    await expect.poll(status, { timeout: 5000, interval: 50 }).toBe('on_call');
    expect(await handoff(a.callId)).toMatchObject({ status: 'no_agent_available' });
    presence.send({ type: 'status', status: 'available' });
    await expect.poll(status, { timeout: 5000, interval: 50 }).toBe('available');

    // The refused request left no open hand-off: a new one is offered.
    await offeredAndAccepted(a.callId);
    expect(await status()).toBe('on_call');
    const b = await liveCall();
    await offeredAndAccepted(b.callId);
    const c = await liveCall();
    expect(await handoff(c.callId)).toMatchObject({ status: 'no_agent_available' });

    presence.send({ type: 'call.end', call_id: a.callId });
    expect(await presence.next('call.ended')).toMatchObject({ call_id: a.callId });
    expect(await status()).toBe('on_call');
    presence.send({ type: 'call.end', call_id: b.callId });
    await presence.next('call.ended');
    expect(await status()).toBe('wrap_up');
    c.media.hangup();
  });
});
