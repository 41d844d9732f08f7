/**
 * Spoken refusals and the hold queue on Telnyx Call Control (issue 24), end to end through the
 * Telnyx simulator: refusals are answered, spoken and hung up on `call.speak.ended`; a caller with
 * no free seat hears the announcement and hold rounds (`playback_start`, each `call.playback.ended`
 * trying for a seat again) until a seat frees (`streaming_start` on the answered call, then a
 * normal conversation) or `maxHoldRounds` pass (the goodbye, then hang-up). Forged step events are
 * refused; a caller hanging up on hold leaves nothing behind; a step whose end event never comes
 * is hung up by its deadline job; a carrier error on a step is retried by the event's redelivery.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { generateKeyPairSync } from 'node:crypto';
import { simDemoScript } from '../../shared/providers/llm/sim.js';
import { signTelnyx } from '../../control-plane/telephony/carriers/telnyx-signature.js';
import { MESSAGES } from '../../control-plane/telephony/inbound.js';
import type { MediaStreamCall, TelnyxCall } from '../carrier-sim/index.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { sleep, until } from '../helpers/campaigns.js';


const MAX_ROUNDS = 5;
const CALLER = '+14155552199';
const UNBOUND = '+14155552188';
const OUTBOUND_ONLY = '+14155552102';
// Each hold scenario has a one-seat workspace of its own.
const SEATS = { connect: '+14155552110', timeout: '+14155552111', forged: '+14155552112', hangup: '+14155552113', retry: '+14155552114', audio: '+14155552115', badAudio: '+14155552116' };
const ACTIONS_OF = (c: TelnyxCall) => c.actions.map((a) => a.name);

let h: TelephonyHarness;
/** The owner (API token) of each one-seat workspace's agent. */
const owners = new Map<string, string>();
/** The live calls of the workspace answering `number` (GET /telephony/calls as its owner). */
const liveCalls = async (number: string) => (await h.call('GET', '/telephony/calls', undefined, owners.get(number))).body.calls as Array<Record<string, unknown>>;

beforeAll(async () => {
  h = await startTelephonyHarness({
    script: simDemoScript,
    carrier: 'telnyx',
    // The deployment's account: an unbound number has no agent, so only it can answer and refuse.
    envAccount: true,
    // A 10 s hold pause plays in 1 s; speech at a tenth of its length.
    mediaScale: 0.1,
    app: { telephony: { maxHoldRounds: MAX_ROUNDS, stepGraceS: 1 }, jobs: { pollingIntervalSeconds: 0.5 } },
  });
  await h.createAgent({ number: OUTBOUND_ONLY, direction: 'outbound' });
  // Hold audio: a file the simulator serves, and one it cannot fetch.
  const holdAudio: Record<string, string> = { [SEATS.audio]: `${h.telnyx!.url}/sim-media/hold.wav`, [SEATS.badAudio]: `${h.telnyx!.url}/no-such-file.wav` };
  for (const number of Object.values(SEATS)) {
    const owner = await h.newUser();
    owners.set(number, owner.token);
    const metadata = { max_concurrent_calls: 1, ...(holdAudio[number] ? { hold_audio_url: holdAudio[number] } : {}) };
    await h.createAgent({ number, metadata, welcome: 'seat taken', owner });
  }
}, 60_000);

afterAll(async () => {
  await h?.close();
});

async function inbound(to: string, from = CALLER, lose?: string[]): Promise<TelnyxCall> {
  const c = await h.telnyx!.placeInboundCall({ webhookUrl: h.inboundUrl(), from, to, connectionId: h.accountSid, lose });
  expect(c.callbacks[0]!.status).toBe(200);
  return c;
}

/** A call holding the workspace's one seat, greeted. */
async function occupy(to: string): Promise<{ call: TelnyxCall; media: MediaStreamCall }> {
  const call = await inbound(to, '+14155552001');
  const media = await call.mediaReady;
  await media.waitUntil(() => media.heard.includes('seat taken'), 10_000, 'occupant greeted');
  return { call, media };
}

type Occupant = Awaited<ReturnType<typeof occupy>>;

/** A caller held behind the occupant of `number`'s one seat, once `rounds` hold rounds have played. */
async function heldBehind(number: string, from: string, rounds = 1): Promise<{ occupant: Occupant; held: TelnyxCall }> {
  const occupant = await occupy(number);
  const held = await inbound(number, from);
  await until(() => held.played.length >= rounds, 10_000, `${rounds} hold round(s)`);
  return { occupant, held };
}

/** The held callers hang up (if still on), then the occupant. */
async function hangUpAll(occupant: Occupant, ...held: TelnyxCall[]): Promise<void> {
  for (const c of held) await h.telnyx!.callerHangup(c);
  occupant.media.hangup();
  await occupant.call.ended;
}

/** The call's REST path at the simulator, and how often its status was read (`GET`: the step deadlines). */
const callPath = (c: TelnyxCall) => `/v2/calls/${encodeURIComponent(c.callControlId)}`;
const statusReads = (c: TelnyxCall) => h.telnyx!.requests.filter((r) => r.method === 'GET' && r.path === callPath(c)).length;

/** The call's step events we were sent, by type. */
const sent = (c: TelnyxCall, type: string) => c.callbacks.filter((x) => x.params.event_type === type);

/** A client_state of a hold round as the adapter writes it (the tests' forged events carry one). */
const holdState = (round: number, to: string) => Buffer.from(JSON.stringify({ s: 'h', n: round, t: to, f: CALLER })).toString('base64');

describe('Telnyx: spoken refusals', () => {
  it('an unbound number hears "not in service" and is hung up at the end of the speech', { timeout: 20_000 }, async () => {
    const c = await inbound(UNBOUND);
    expect(await c.ended).toBe('normal_clearing');
    expect(c.said).toEqual([MESSAGES.notInService]);
    expect(ACTIONS_OF(c)).toEqual(['answer', 'speak', 'hangup']);
    // The hang-up answered the end of the speech, which came back to the inbound route with our state.
    expect(sent(c, 'call.speak.ended').map((x) => x.status)).toEqual([200]);
    expect(c.media).toBeUndefined();
    expect(c.answeredAtMs).toBeGreaterThan(0);
    // Its deadline job (1 s grace here) reads the call back, finds it over and does nothing more.
    await until(() => statusReads(c) > 0, 10_000, 'deadline ran');
    expect(h.telnyx!.requests.filter((r) => r.path.startsWith(`${callPath(c)}/actions/`)).map((r) => r.status)).toEqual([200, 200, 200]);
  });

  it("an outbound-only agent's refusal is spoken, then hung up", { timeout: 20_000 }, async () => {
    const c = await inbound(OUTBOUND_ONLY);
    expect(await c.ended).toBe('normal_clearing');
    expect(c.said).toEqual([MESSAGES.noInbound]);
    expect(ACTIONS_OF(c)).toEqual(['answer', 'speak', 'hangup']);
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);
  });

  it('a refusal whose end event never arrives is hung up by its deadline job', { timeout: 20_000 }, async () => {
    const c = await inbound(UNBOUND, CALLER, ['call.speak.ended']);
    await until(() => c.said.length === 1, 5000, 'refusal spoken');
    // Nothing came back to us: the deadline (speech + 1 s grace, pg-boss polling) reads the call's
    // state from Telnyx, finds the refusal still in force and hangs up.
    expect(await Promise.race([c.ended, sleep(10_000).then(() => 'still up')])).toBe('normal_clearing');
    expect(ACTIONS_OF(c)).toEqual(['answer', 'speak', 'hangup']);
    expect(statusReads(c)).toBeGreaterThan(0);
  });
});

describe('Telnyx: hold while the workspace has no free seat', () => {
  it('holds the caller, then starts the stream on the answered call when a seat frees: two turns, hang-up, nothing left', { timeout: 60_000 }, async () => {
    const { occupant, held } = await heldBehind(SEATS.connect, '+14155552198', 2);
    expect(held.media).toBeUndefined();
    // Announced once, then pauses (a second of silence looped holdPauseS times).
    expect(held.said).toEqual([MESSAGES.hold]);
    expect(held.played.slice(0, 2)).toEqual(['silence:10', 'silence:10']);
    // The held caller has no record (and no seat): the one live call is the occupant's.
    expect((await liveCalls(SEATS.connect)).map((c) => c.provider_call_sid)).toEqual([occupant.call.callControlId]);

    occupant.media.hangup();
    await occupant.call.ended;
    const media = await held.mediaReady;
    // No second answer: the stream was started on the call answered for hold.
    expect(ACTIONS_OF(held).filter((n) => n === 'answer')).toHaveLength(1);
    expect(ACTIONS_OF(held).at(-1)).toBe('streaming_start');
    expect(media.o.url.startsWith(`ws://127.0.0.1:${h.engine.port}/api/v1/voice/ws/telnyx/`)).toBe(true);
    await media.waitUntil(() => media.heard.includes('seat taken'), 15_000, 'held caller greeted');
    const live = await liveCalls(SEATS.connect);
    expect(live).toHaveLength(1);
    expect(live[0]).toMatchObject({ provider_call_sid: held.callControlId, status: 'in_progress', from_number: '+14155552198', telephony_provider: 'telnyx' });
    const callId = live[0]!.call_id as string;
    const sessionId = live[0]!.session_id as string;

    await media.say('what time do you open');
    await media.waitUntil(() => media.heard.includes('you said: what time do you open.'), 15_000, 'turn 1');
    await media.say('is this the right number');
    await media.waitUntil(() => media.heard.includes('you said: is this the right number.'), 15_000, 'turn 2');
    // The hold rounds' deadlines (a 10 s pause + 1 s grace) read the call back and find it moved on.
    await until(() => statusReads(held) >= 2, 15_000, 'hold deadlines ran');
    expect(held.isOver).toBe(false);
    expect(ACTIONS_OF(held)).not.toContain('hangup');

    // Its events still come to the inbound route (the answer for hold named no events URL): the
    // hang-up reaches the call all the same.
    media.hangup();
    await held.ended;
    await until(async () => (await h.call('GET', `/telephony/calls/${callId}`, undefined, owners.get(SEATS.connect))).status === 404, 5000, 'call gone');
    await until(() => !h.engine.calls.has(sessionId), 5000, 'engine call closed');
    const cap = h.captured.get(sessionId)!;
    expect(cap.turns.map((t) => t.user_text)).toEqual(['what time do you open', 'is this the right number']);
  });

  it(`held past maxHoldRounds (${MAX_ROUNDS}): the goodbye, then hang-up`, { timeout: 40_000 }, async () => {
    const occupant = await occupy(SEATS.timeout);
    const held = await inbound(SEATS.timeout, '+14155552197');
    expect(await Promise.race([held.ended, sleep(20_000).then(() => 'still up')])).toBe('normal_clearing');
    expect(held.said).toEqual([MESSAGES.hold, MESSAGES.holdTimeout]);
    // Rounds 0 .. MAX_ROUNDS-1 played; the last round's end spoke the goodbye, whose end hung up.
    expect(held.played).toHaveLength(MAX_ROUNDS);
    expect(ACTIONS_OF(held).slice(-2)).toEqual(['speak', 'hangup']);
    expect(held.media).toBeUndefined();
    // The occupant was never disturbed.
    expect(occupant.call.isOver).toBe(false);
    await hangUpAll(occupant);
  });

  it("plays the agent's hold audio each round; hold audio that cannot be fetched falls back to pauses", { timeout: 40_000 }, async () => {
    for (const number of [SEATS.audio, SEATS.badAudio]) {
      const { occupant, held } = await heldBehind(number, '+14155552192', 2);
      const starts = held.actions.filter((a) => a.name === 'playback_start').map((a) => a.body.audio_url ?? `silence:${String(a.body.loop)}`);
      if (number === SEATS.audio) {
        expect(held.played.slice(0, 2)).toEqual([`${h.telnyx!.url}/sim-media/hold.wav`, `${h.telnyx!.url}/sim-media/hold.wav`]);
      } else {
        // The first round's file was not found (`call.playback.ended` status `file_not_found`): pauses from then on.
        expect(starts[0]).toBe(`${h.telnyx!.url}/no-such-file.wav`);
        expect(starts.slice(1, 3)).toEqual(['silence:10', 'silence:10']);
        expect(held.played.slice(0, 2)).toEqual(['silence:10', 'silence:10']);
      }
      expect(held.said).toEqual([MESSAGES.hold]);
      await hangUpAll(occupant, held);
    }
  });

  it('forged hold and refusal events are refused (403) and change nothing', { timeout: 40_000 }, async () => {
    const { occupant, held } = await heldBehind(SEATS.forged, '+14155552196');
    const route = h.inboundUrl();
    // Accepted, this round (past the last) would speak the goodbye and hang up.
    const round = await h.telnyx!.event(held, 'call.playback.ended', { client_state: holdState(99, SEATS.forged), status: 'completed' }, true, route, true);
    expect(round.status).toBe(403);
    // Accepted, this would hang the caller up.
    const refusal = await h.telnyx!.event(held, 'call.speak.ended', { client_state: Buffer.from(JSON.stringify({ s: 'r', t: SEATS.forged, f: CALLER })).toString('base64'), status: 'completed' }, true, route, true);
    expect(refusal.status).toBe(403);
    // Signed with a key from elsewhere but well formed: still refused, as is an unsigned one.
    const body = JSON.stringify({ data: { event_type: 'call.playback.ended', payload: { call_control_id: held.callControlId, client_state: holdState(99, SEATS.forged), status: 'completed' } } });
    const ts = String(Math.floor(Date.now() / 1000));
    const signedElsewhere: Record<string, string> = { 'telnyx-timestamp': ts, 'telnyx-signature-ed25519': signTelnyx(generateKeyPairSync('ed25519').privateKey, body, ts) };
    for (const headers of [signedElsewhere, {}]) {
      const res = await fetch(route, { method: 'POST', headers: { 'content-type': 'application/json', ...headers }, body });
      expect(res.status).toBe(403);
    }
    await sleep(1500);
    expect(held.isOver).toBe(false);
    expect(held.said).toEqual([MESSAGES.hold]);
    expect(ACTIONS_OF(held).filter((n) => n === 'speak' || n === 'hangup')).toEqual(['speak']);
    await hangUpAll(occupant, held);
  });

  it('the caller hanging up on hold leaves no live call and releases no seat', { timeout: 40_000 }, async () => {
    const { occupant, held } = await heldBehind(SEATS.hangup, '+14155552195');
    await h.telnyx!.callerHangup(held);
    expect(await held.ended).toBe('normal_clearing');
    const playedAtHangup = held.played.length;
    await sleep(2500);
    // Nothing more was asked of the ended call; the one live call is still the occupant's.
    expect(held.played.length).toBe(playedAtHangup);
    expect(ACTIONS_OF(held).every((n) => n === 'answer' || n === 'speak' || n === 'playback_start')).toBe(true);
    expect((await liveCalls(SEATS.hangup)).map((c) => c.provider_call_sid)).toEqual([occupant.call.callControlId]);
    // The occupant's seat is still taken: the next caller is held too.
    const next = await inbound(SEATS.hangup, '+14155552194');
    await until(() => next.played.length >= 1, 10_000, 'next caller on hold');
    expect(next.media).toBeUndefined();
    await hangUpAll(occupant, next);
    await until(async () => (await liveCalls(SEATS.hangup)).length === 0, 5000, 'no live call');
  });

  it('a carrier error on a hold step is answered 503 and the step is retried by the redelivered event', { timeout: 40_000 }, async () => {
    const { occupant, held } = await heldBehind(SEATS.retry, '+14155552193');
    // The next command (the next round's playback) fails once at Telnyx.
    h.telnyx!.failNextAction = { status: 500, code: '10007', detail: 'Unexpected error' };
    await until(() => held.played.length >= 3, 15_000, 'hold goes on');
    const ends = sent(held, 'call.playback.ended').map((x) => x.status);
    expect(ends).toContain(503);
    expect(ends.filter((s) => s === 200).length).toBeGreaterThanOrEqual(2);
    expect(held.isOver).toBe(false);
    await hangUpAll(occupant, held);
  });
});
