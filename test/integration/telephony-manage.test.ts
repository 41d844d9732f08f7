/**
 * The live call API around the carrier simulator: the outbound error table (400 / 401 / 404 / 502 /
 * 503 and 4xx from the voice pipeline), list / get / end fenced per user (404, end of an unknown
 * call: 200 with a message), cold transfer (the carrier gets `<Dial>`, the AI drops off, the call
 * leaves the registry when the transferred leg ends), signed carrier callbacks naming another
 * carrier call (ignored, 200), and the no-auth providers / capabilities.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { randomBytes } from 'node:crypto';
import { newId } from '../../shared/ids.js';
import { encodeWavChannels } from '../helpers/wav.js';
import { newCallRecord } from '../../control-plane/telephony/live-calls.js';
import type { TestUser } from '../helpers/accounts.js';
import { api } from '../helpers/accounts.js';
import { computeSignature } from '../../control-plane/telephony/signature.js';
import { parseTwiml } from '../carrier-sim/index.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { MEDIA_ENDED_TOPIC } from '../../shared/voice/media-ended.js';

let h: TelephonyHarness;
let other: TestUser;
const AGENT_NUMBER = '+14155550501';
let agentId = '';
let noNumberAgent = '';
let noAccountAgent = '';
let inboundOnlyAgent = '';
let badTokenAgent = '';
let othersAgent = '';
let nextNumber = 600;

beforeAll(async () => {
  h = await startTelephonyHarness({ app: { mediaEndedCheckDelayS: 1 } });
  other = await h.newUser();
  agentId = await h.createAgent({ number: AGENT_NUMBER });
  noNumberAgent = await h.createAgent({});
  noAccountAgent = await h.createAgent({ number: '+14155550502', withAccount: false });
  inboundOnlyAgent = await h.createAgent({ number: '+14155550503', direction: 'inbound' });
  badTokenAgent = await h.createAgent({ number: '+14155550504', token: 'wrong-token' });
  othersAgent = await h.createAgent({ number: '+14155550505', owner: other });
}, 90_000);

afterAll(async () => {
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const callee = () => `+1415555${String(nextNumber++).padStart(4, '0')}`;

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(25);
  }
}

/** Calls a test started: hung up after it, so a failed attempt leaves nothing live for its retry. */
const started: Array<{ mediaReady: Promise<{ hangup(): void }>; ended: Promise<unknown> }> = [];

afterEach(async () => {
  const within = <T>(p: Promise<T>) => Promise.race([p, new Promise<undefined>((r) => setTimeout(() => r(undefined), 5_000))]);
  for (const sim of started.splice(0)) {
    (await within(sim.mediaReady))?.hangup();
    await within(sim.ended);
  }
});

async function liveCall(extra: Record<string, unknown> = {}) {
  const to = callee();
  h.callees.set(to, { dialDurationMs: 1500 });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to, ...extra });
  expect(res.status).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  started.push(sim);
  const media = await sim.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  return { body: res.body, sim, media };
}

describe('providers and capabilities (no auth)', () => {
  it('lists the six carriers, those with an adapter supported', async () => {
    const res = await api(h.app, 'GET', '/api/v1/telephony/providers');
    expect(res.status).toBe(200);
    expect(res.body.default_provider).toBe('twilio');
    expect(res.body.providers.map((p: { name: string }) => p.name)).toEqual(['twilio', 'telnyx', 'plivo', 'vonage', 'signalwire', 'exotel']);
    expect(res.body.providers.filter((p: { supported: boolean }) => p.supported).map((p: { name: string }) => p.name)).toEqual(expect.arrayContaining(['twilio', 'telnyx', 'signalwire']));
    expect(res.body.providers[0]).toEqual({ name: 'twilio', display_name: 'Twilio', supported: true, media_encoding: 'mulaw', sample_rate_hz: 8000 });
  });

  it('describes per-carrier features and the AMD settings', async () => {
    const res = await api(h.app, 'GET', '/api/v1/telephony/capabilities');
    expect(res.status).toBe(200);
    expect(res.body.carriers[0]).toMatchObject({ provider: 'twilio', supported: true, inbound: true, outbound: true, answering_machine_detection: true, cold_transfer: true });
    expect(res.body.carriers[1]).toMatchObject({ provider: 'telnyx', supported: true, outbound: true, answering_machine_detection: true, dtmf: true, signature_verification: true });
    expect(res.body.carriers[4]).toMatchObject({ provider: 'signalwire', supported: true, cold_transfer: true, recording: true });
    // A carrier without an adapter claims nothing.
    for (const c of res.body.carriers.filter((x: { supported: boolean }) => !x.supported)) expect(c).toMatchObject({ inbound: false, outbound: false, dtmf: false });
    expect(res.body).toMatchObject({
      amd_policies: ['disabled', 'hangup_on_machine', 'leave_voicemail', 'talk_anyway'],
      amd_verdict_timeout_min_s: 2,
      amd_verdict_timeout_max_s: 30,
      amd_verdict_timeout_default_s: 8,
    });
  });
});

describe('outbound errors', () => {
  const cases: Array<[string, () => Record<string, unknown>, number, string, RegExp?]> = [
    ['missing agent_id', () => ({ to_number: '+14155550600' }), 400, 'INVALID_REQUEST', /agent_id/],
    ['to_number not E.164', () => ({ agent_id: agentId, to_number: '555-0100' }), 400, 'INVALID_REQUEST', /to_number/],
    ['unknown telephony_provider', () => ({ agent_id: agentId, to_number: '+14155550600', telephony_provider: 'carrier-pigeon' }), 400, 'INVALID_REQUEST', /telephony_provider/],
    // The Twilio binding is never lent to SignalWire (docs/telephony.md "Credentials"), and there is no SignalWire account.
    ['a provider other than the credentials\' (SignalWire with a Twilio account only)', () => ({ agent_id: agentId, to_number: '+14155550600', telephony_provider: 'signalwire' }), 503, 'SERVICE_UNAVAILABLE', /no usable carrier credentials/],
    ['no from_number and no number on the agent', () => ({ agent_id: noNumberAgent, to_number: '+14155550600' }), 400, 'INVALID_REQUEST', /from_number/],
    ['an inbound-only agent', () => ({ agent_id: inboundOnlyAgent, to_number: '+14155550600' }), 400, 'INVALID_REQUEST', /inbound/],
    ['no usable credentials', () => ({ agent_id: noAccountAgent, to_number: '+14155550600' }), 503, 'SERVICE_UNAVAILABLE'],
    ["another user's agent", () => ({ agent_id: othersAgent, to_number: '+14155550600' }), 404, 'NOT_FOUND'],
    ['an unknown agent', () => ({ agent_id: newId(), to_number: '+14155550600' }), 404, 'NOT_FOUND'],
    ['carrier refuses the credentials', () => ({ agent_id: badTokenAgent, to_number: '+14155550600' }), 502, 'BAD_GATEWAY', /20003/],
  ];
  it.each(cases)('%s -> %i', async (_name, body, status, code, message) => {
    const res = await h.call('POST', '/telephony/calls/outbound', body());
    expect(res.status).toBe(status);
    expect(res.body.error.code).toBe(code);
    if (message) expect(res.body.error.message).toMatch(message);
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);
  });

  it('needs a bearer token', async () => {
    const res = await api(h.app, 'POST', '/api/v1/telephony/calls/outbound', { body: { agent_id: agentId, to_number: '+14155550600' } });
    expect(res.status).toBe(401);
    expect((await api(h.app, 'GET', '/api/v1/telephony/calls')).status).toBe(401);
  });

  it('502 when the carrier rejects the call; nothing is left behind', async () => {
    h.sim.failNextCreate = { status: 400, code: 21211, message: "The 'To' number +14155550600 is not a valid phone number." };
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: '+14155550600' });
    expect(res.status).toBe(502);
    expect(res.body.error).toMatchObject({ code: 'BAD_GATEWAY' });
    expect(res.body.error.message).toMatch(/21211/);
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);
  });

  it.each([429, 503])('503 with Retry-After when the carrier answers %i (busy: retry later, not a refusal)', async (status) => {
    h.sim.failNextCreate = { status, code: 20429, message: 'Too Many Requests' };
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: '+14155550600' });
    expect(res.status).toBe(503);
    expect(res.body.error).toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
    expect(res.headers['retry-after']).toBe('5');
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);
  });

  it('propagates the voice pipeline 4xx: an agent without providers', async () => {
    const created = await h.call('POST', '/agents', { workspace_id: h.user.workspaceId, name: 'no providers' });
    const id = created.body.data.id;
    await h.call('PUT', `/agents/${id}/telephony`, { carrier_phone_number: '+14155550506', carrier_account_sid: h.accountSid, carrier_auth_token: h.authToken });
    expect((await h.call('POST', `/agents/${id}/versions/publish`)).status).toBe(200);
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: id, to_number: '+14155550600' });
    expect(res.status).toBe(400);
    expect(res.body.error.code).toBe('MISSING_PROVIDER');
  });

  it('uses an explicit from_number', { timeout: 20_000 }, async () => {
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: callee(), from_number: '+14155550599' });
    expect(res.status).toBe(200);
    expect(res.body.from_number).toBe('+14155550599');
    const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
    expect(sim.createParams.get('From')).toBe('+14155550599');
    (await sim.mediaReady).hangup();
    await sim.ended;
  });
});

describe('list, get, end', () => {
  it("fences calls per user: another user's call is 404 and their end changes nothing", { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    const mine = await h.call('GET', '/telephony/calls');
    expect(mine.body.count).toBe(1);
    expect(mine.body.calls[0].call_id).toBe(body.call_id);
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`, undefined, other.token)).status).toBe(404);
    expect((await h.call('GET', '/telephony/calls', undefined, other.token)).body).toEqual({ count: 0, calls: [], meta: { page: 1, per_page: 20, total: 0, total_pages: 0 } });
    const theirEnd = await h.call('POST', `/telephony/calls/${body.call_id}/end`, undefined, other.token);
    expect(theirEnd.status).toBe(200);
    expect(theirEnd.body).toMatchObject({ call_id: body.call_id, status: 'ended' });
    expect(theirEnd.body.message).toMatch(/not found in the active call registry/);
    expect(media.isOpen).toBe(true);

    // The owner ends it: carrier hangup (Status=completed) and engine end.
    const end = await h.call('POST', `/telephony/calls/${body.call_id}/end`);
    expect(end.status).toBe(200);
    expect(end.body).toEqual({ call_id: body.call_id, status: 'ended', message: 'call ended' });
    expect(await sim.ended).toBe('completed');
    expect(h.sim.requests.some((r) => r.path.endsWith(`/Calls/${sim.sid}.json`) && r.params.get('Status') === 'completed')).toBe(true);
    await until(() => !h.engine.calls.has(body.session_id), 5000, 'engine call ended');
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).status).toBe(404);
    const again = await h.call('POST', `/telephony/calls/${body.call_id}/end`);
    expect(again.status).toBe(200);
    expect(again.body.message).toMatch(/not found/);
  });

  it('a member removed from the workspace loses the calls they placed at once (404, and their end changes nothing)', { timeout: 30_000 }, async () => {
    const member = await h.newUser();
    expect((await h.call('POST', `/auth/workspaces/${h.user.workspaceId}/members`, { email: member.email, role: 'member' })).status).toBe(201);
    const to = callee();
    h.callees.set(to, { dialDurationMs: 1500 });
    const placed = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to }, member.token);
    expect(placed.status).toBe(200);
    const sim = await h.sim.waitForCall((c) => c.sid === placed.body.provider_call_sid);
    started.push(sim);
    const media = await sim.mediaReady;
    expect((await h.call('GET', `/telephony/calls/${placed.body.call_id}`, undefined, member.token)).status).toBe(200);
    expect((await h.call('DELETE', `/auth/workspaces/${h.user.workspaceId}/members/${member.userId}`)).status).toBe(200);
    expect((await h.call('GET', `/telephony/calls/${placed.body.call_id}`, undefined, member.token)).status).toBe(404);
    expect((await h.call('GET', '/telephony/calls', undefined, member.token)).body.count).toBe(0);
    expect((await h.call('POST', `/telephony/calls/${placed.body.call_id}/transfer`, { to_number: '+14155550188' }, member.token)).status).toBe(404);
    const end = await h.call('POST', `/telephony/calls/${placed.body.call_id}/end`, undefined, member.token);
    expect(end.body.message).toMatch(/not found in the active call registry/);
    expect(media.isOpen).toBe(true);
    expect(sim.twiml.some((t) => t.includes('+14155550188'))).toBe(false);
    media.hangup();
    await sim.ended;
  });

  it('end of an unknown call id is 200 with a message', async () => {
    const res = await h.call('POST', `/telephony/calls/${newId()}/end`);
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ended');
    expect(res.body.message).toMatch(/not found in the active call registry/);
  });
});

describe('cold transfer', () => {
  it('hands the call to a human: <Dial> with the agent number as caller id, the AI drops off', { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    expect((await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '12345' })).status).toBe(400);
    expect((await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' }, other.token)).status).toBe(404);

    const res = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' });
    expect(res.status).toBe(200);
    expect(res.body).toEqual({ call_id: body.call_id, transferred: true, to_number: '+14155559999' });
    // The carrier swapped the call's TwiML: the stream stopped and the AI session ended.
    await media.closed();
    await until(() => !h.engine.calls.has(body.session_id), 5000, 'AI dropped off');
    const end = h.captured.get(body.session_id)!.end!;
    expect(['stream_stopped', 'transferred']).toContain(end.reason);
    const dial = parseTwiml(sim.twiml.at(-1)!).children[0]!;
    expect(dial.name).toBe('Dial');
    expect(dial.attrs).toMatchObject({ callerId: AGENT_NUMBER, record: 'record-from-answer' });
    expect(dial.attrs.action).toMatch(new RegExp(`/api/v1/telephony/calls/${body.call_id}/dial-complete$`));
    await until(() => sim.transferredTo === '+14155559999', 2000, 'dialled');

    // While the human leg is up, the call stays listed as transferred.
    const during = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(during.status).toBe(200);
    expect(during.body).toMatchObject({ status: 'in_progress', transferred_to: '+14155559999' });

    expect(await sim.ended).toBe('completed');
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone after the transferred leg');
  });

  it('502 when the carrier refuses the transfer; the AI stays on the call', { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    h.sim.failNextUpdate = { status: 400, code: 21220, message: 'Call is not in-progress. Cannot redirect.' };
    const res = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' });
    expect(res.status).toBe(502);
    expect(res.body.error.code).toBe('BAD_GATEWAY');
    const live = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(live.body.transferred_to).toBe('');
    expect(media.isOpen).toBe(true);
    media.hangup();
    await sim.ended;
  });

  it('a transfer whose answer is lost (it may have happened) keeps the mark: 502, no second transfer, no stale sweep', { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    h.sim.loseNextUpdateAnswer = true;
    const res = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' });
    expect(res.status).toBe(502);
    expect(res.body.error.message).toMatch(/the transfer may have happened/);
    // It did happen here: the person is on the call, which stays listed as transferred.
    await until(() => sim.transferredTo === '+14155559999', 5000, 'dialled');
    await media.closed();
    const during = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(during.body).toMatchObject({ status: 'in_progress', transferred_to: '+14155559999' });
    const again = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155558888' });
    expect(again.status).toBe(409);
    expect(again.body.error.details).toEqual([{ field: 'call_id', problem: 'already transferred to +14155559999' }]);
    expect(sim.twiml.filter((t) => t.includes('+14155558888'))).toEqual([]);
    expect(await sim.ended).toBe('completed');
  });

  it('two concurrent transfers of one call: one dials, the other is 409', { timeout: 30_000 }, async () => {
    const { body, sim } = await liveCall();
    const [a, b] = await Promise.all([
      h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155557771' }),
      h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155557772' }),
    ]);
    expect([a.status, b.status].sort()).toEqual([200, 409]);
    const winner = (a.status === 200 ? a : b).body.to_number as string;
    const loser = winner === '+14155557771' ? '+14155557772' : '+14155557771';
    await until(() => sim.transferredTo === winner, 5000, 'dialled');
    expect(sim.twiml.filter((t) => t.includes(loser))).toEqual([]);
    expect((a.status === 409 ? a : b).body.error.details).toEqual([{ field: 'call_id', problem: `already transferred to ${winner}` }]);
    expect(await sim.ended).toBe('completed');
  });

  it('a ringing call whose session is gone and that the carrier never ends frees its seat: ended no-answer and hung up', { timeout: 30_000 }, async () => {
    const oneSeat = await h.createAgent({ number: `+1415555${String(7000 + Math.floor(Math.random() * 2999))}`, metadata: { max_concurrent_calls: 1 } });
    const to = callee();
    // Rings far longer than the test: only our side can end it.
    h.callees.set(to, { ringMs: 60_000 });
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: oneSeat, to_number: to });
    expect(res.status).toBe(200);
    const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
    await until(() => sim.status === 'ringing', 5000, 'ringing');
    // Inside its answer window the ringing call is live and holds the one seat.
    const second = callee();
    h.callees.set(second, { ringMs: 60_000 });
    expect((await h.call('POST', '/telephony/calls/outbound', { agent_id: oneSeat, to_number: second })).status).toBe(503);
    expect((await h.call('GET', `/telephony/calls/${res.body.call_id}`)).body.status).toBe('ringing');
    expect(sim.isFinal).toBe(false);
    // Its session's answer window passed (purged as the registry does): nothing will connect to it.
    await h.infra.registry.sessions.deleteSession(res.body.session_id);
    // The seat check sweeps it: the next call gets the seat.
    const next = await h.call('POST', '/telephony/calls/outbound', { agent_id: oneSeat, to_number: second });
    expect(next.status, JSON.stringify(next.body)).toBe(200);
    expect((await h.call('GET', `/telephony/calls/${res.body.call_id}`)).status).toBe(404);
    // Hung up before it was answered: the phone stops ringing.
    expect(await sim.ended).toBe('completed');
    expect(sim.answeredAtMs).toBeFalsy();
    expect((await h.call('POST', `/telephony/calls/${next.body.call_id}/end`)).status).toBe(200);
  });

  it('a connected call whose "answered" callback was lost is ended as connected when its session goes, not as no-answer', { timeout: 30_000 }, async () => {
    const { body, sim } = await liveCall();
    // As if the carrier's in-progress callback never came: the record still says ringing.
    await h.app.telephony.calls.patch(body.call_id, { status: 'ringing', answered_at_ms: 0 });
    expect((await h.app.telephony.calls.get(body.call_id))!.media_connected_at_ms).toBeGreaterThan(0);
    await h.infra.registry.sessions.deleteSession(body.session_id);
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).status).toBe(404);
    // Not hung up by us (the engine's own end closes the stream), and recorded as a session end.
    await until(async () => (await h.call('GET', `/conversations/by-session/${body.session_id}`)).body.data?.metadata?.call_status === 'session_ended', 10_000, 'annotated');
    expect(sim.isFinal).toBe(false);
    // The carrier's final callback (its duration) will find no record: the length is measured here.
    const meta = (await h.call('GET', `/conversations/by-session/${body.session_id}`)).body.data.metadata;
    expect(typeof meta.carrier_duration_seconds).toBe('number');
  });

  it("a call whose media ended is ended by the engine's notice, with no read of the calls (no carrier callback came)", { timeout: 30_000 }, async () => {
    const { body, sim } = await liveCall();
    await h.app.telephony.calls.patch(body.call_id, { status: 'ringing', answered_at_ms: 0 });
    await h.infra.registry.sessions.deleteSession(body.session_id);
    // What the engine sends when the call's media ends (media-engine/start-call.ts).
    await h.infra.registry.invalidations.publish(MEDIA_ENDED_TOPIC, body.call_id);
    await until(async () => (await h.call('GET', `/conversations/by-session/${body.session_id}`)).body.data?.metadata?.call_status === 'session_ended', 15_000, 'ended by the notice');
    expect(await h.app.telephony.calls.get(body.call_id)).toBeUndefined();
    expect(sim.isFinal).toBe(false);
  });

  it('400 when the call has no carrier sid yet', async () => {
    const callId = newId();
    await h.app.telephony.calls.put(
      newCallRecord({ call_id: callId, agent_id: agentId, workspace_id: h.user.workspaceId, user_id: h.user.userId, direction: 'outbound', status: 'initiated', created_at_ms: Date.now() }),
      0,
    );
    const res = await h.call('POST', `/telephony/calls/${callId}/transfer`, { to_number: '+14155559999' });
    expect(res.status).toBe(400);
    expect(res.body.error.message).toMatch(/no carrier call sid/);
    await h.app.telephony.calls.remove(callId);
  });
});

describe('carrier callbacks naming another call', () => {
  /** A form callback signed with the account's real token, as the carrier would send it. */
  async function signedCallback(callId: string, route: 'status' | 'amd' | 'recording', params: Record<string, string>) {
    const url = `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${callId}/${route}`;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-twilio-signature': computeSignature(h.authToken, url, params) },
      body: new URLSearchParams(params).toString(),
    });
    return { status: res.status, body: await res.json() };
  }

  it('a signed status or AMD callback whose CallSid is not the call\'s changes nothing and is answered 200', { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    const other = `CA${'0'.repeat(32)}`;
    expect(body.provider_call_sid).not.toBe(other);

    const status = await signedCallback(body.call_id, 'status', { CallSid: other, AccountSid: h.accountSid, CallStatus: 'completed', CallDuration: '3', SequenceNumber: '99' });
    expect(status).toEqual({ status: 200, body: { received: true } });
    const amd = await signedCallback(body.call_id, 'amd', { CallSid: other, AccountSid: h.accountSid, AnsweredBy: 'machine_start', MachineDetectionDuration: '800' });
    expect(amd).toEqual({ status: 200, body: { received: true } });
    // A missing CallSid is not this call's either.
    expect((await signedCallback(body.call_id, 'status', { AccountSid: h.accountSid, CallStatus: 'completed' })).status).toBe(200);
    // Nor is a recording callback's; and a recording URL we would never fetch is not kept even for the right call.
    const recording = { AccountSid: h.accountSid, RecordingSid: `RE${'1'.repeat(32)}`, RecordingStatus: 'completed' };
    expect((await signedCallback(body.call_id, 'recording', { ...recording, RecordingUrl: 'https://api.twilio.com/x.wav' })).status).toBe(200);
    expect((await signedCallback(body.call_id, 'recording', { ...recording, CallSid: other, RecordingUrl: 'https://api.twilio.com/x.wav' })).status).toBe(200);
    expect((await signedCallback(body.call_id, 'recording', { ...recording, CallSid: body.provider_call_sid, RecordingUrl: 'javascript:alert(1)' })).status).toBe(200);

    await sleep(200);
    const live = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ status: 'in_progress', amd_verdict: '', answered_by: '', provider_call_sid: body.provider_call_sid, recording_url: '' });
    expect(media.isOpen).toBe(true);
    expect(h.engine.calls.has(body.session_id)).toBe(true);

    // The same callback naming the call's own sid ends it (the signature and the route were right).
    const own = await signedCallback(body.call_id, 'status', { CallSid: body.provider_call_sid, AccountSid: h.accountSid, CallStatus: 'completed', CallDuration: '3' });
    expect(own).toEqual({ status: 200, body: { received: true } });
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).status).toBe(404);
    await until(() => !h.engine.calls.has(body.session_id), 5000, 'engine call ended');
    // The carrier said the call is over (the callee hung up, its callback ahead of the stream's stop): not an API end.
    await until(() => h.captured.get(body.session_id)?.end !== undefined, 5000, 'record ended');
    expect(h.captured.get(body.session_id)!.end!.reason).toBe('carrier_ended');
    media.hangup();
    await sim.ended;
  });

  it('the call recording proxy: the recording a signed callback named, fetched from the carrier per request, for the call\'s workspace only', { timeout: 30_000 }, async () => {
    const { body, sim, media } = await liveCall();
    const rsid = `RE${randomBytes(16).toString('hex')}`;
    const wav = encodeWavChannels([Int16Array.from({ length: 800 }, (_, i) => Math.round(8000 * Math.sin(i / 5)))], 8000);
    h.sim.recordings.record(rsid, { dialRecording: wav }, { channels: 1, format: 'wav' });
    const recording = { AccountSid: h.accountSid, CallSid: body.provider_call_sid, RecordingSid: rsid, RecordingStatus: 'completed', RecordingUrl: `${h.sim.url}/2010-04-01/Accounts/${h.accountSid}/Recordings/${rsid}` };
    expect((await signedCallback(body.call_id, 'recording', recording)).status).toBe(200);
    media.hangup();
    await sim.ended;
    let conversationId = '';
    await until(async () => {
      const [row] = await h.infra.sql<{ id: string }[]>`select id from conversations where call_id = ${body.call_id} and metadata->>'recording_sid' = ${rsid}`;
      conversationId = row?.id ?? '';
      return conversationId !== '';
    }, 10_000, 'the recording on the conversation');
    const path = `/api/v1/conversations/${conversationId}/recordings/${rsid}`;
    const got = await fetch(`http://127.0.0.1:${h.app.port}${path}`, { headers: { authorization: `Bearer ${h.user.token}` } });
    expect(got.status).toBe(200);
    expect(got.headers.get('content-type')).toBe('audio/wav');
    expect(Buffer.from(await got.arrayBuffer()).equals(Buffer.from(wav))).toBe(true);
    // Re-authenticated, fenced, and only the recording the call named.
    expect((await fetch(`http://127.0.0.1:${h.app.port}${path}`)).status).toBe(401);
    expect((await fetch(`http://127.0.0.1:${h.app.port}${path}`, { headers: { authorization: `Bearer ${other.token}` } })).status).toBe(404);
    expect((await fetch(`http://127.0.0.1:${h.app.port}/api/v1/conversations/${conversationId}/recordings/RE${'2'.repeat(32)}`, { headers: { authorization: `Bearer ${h.user.token}` } })).status).toBe(404);
  });
});
