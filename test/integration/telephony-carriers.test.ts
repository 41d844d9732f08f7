/**
 * The same call scenarios for every carrier of this branch (Twilio, SignalWire, Telnyx), each
 * against its simulator (test/carrier-sim/: SignalWire = the Twilio simulator under `/api/laml`
 * signing with the project's signing key; Telnyx = telnyx.ts, Call Control + Ed25519 + its media
 * dialect) over a jittery, reordering, lossy link: inbound with two turns, a barge-in (`clear`), a
 * key press and hang-up; a forged webhook refused; outbound without `telephony_provider`
 * (detected from the credentials) with status callbacks and a recording; AMD verdicts; transfer;
 * end by API.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simDemoScript } from '../../shared/providers/llm/sim.js';
import { computeSignature } from '../../control-plane/telephony/signature.js';
import type { MediaStreamCall } from '../carrier-sim/index.js';
import { parseTwiml, streamOf } from '../carrier-sim/index.js';
import { startTelephonyHarness, type HarnessCarrier, type TelephonyHarness } from '../carrier-sim/harness.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(25);
  }
}

/** A jittery link: uniform 0-20 ms jitter (reorders), 1 % loss; seeded. */
const LINK = { jitterMs: 20, lossProb: 0.01, seed: 7 };

/** What a scenario needs from a carrier's simulator, whatever its protocol. */
interface SimView {
  media: Promise<MediaStreamCall>;
  ended: Promise<unknown>;
  sid: string;
  transferredTo(): string | undefined;
  /** The carrier's dial request: stream URL and whether AMD / recording were asked for. */
  dialed(): { streamUrl: string; amd: string | undefined; record: boolean };
  recordingSent(): boolean;
}

function viewOf(h: TelephonyHarness, sid: string): SimView {
  if (h.carrier === 'telnyx') {
    const c = h.telnyx!.calls.get(sid)!;
    return {
      media: c.mediaReady,
      ended: c.ended,
      sid,
      transferredTo: () => c.transferredTo,
      dialed: () => ({ streamUrl: String(c.dial.stream_url ?? ''), amd: c.dial.answering_machine_detection as string | undefined, record: c.dial.record === 'record-from-answer' }),
      recordingSent: () => c.callbacks.some((x) => x.params.event_type === 'call.recording.saved' && x.status === 200),
    };
  }
  const c = h.sim.calls.get(sid)!;
  return {
    media: c.mediaReady,
    ended: c.ended,
    sid,
    transferredTo: () => c.transferredTo,
    dialed: () => {
      const twiml = c.createParams.get('Twiml');
      return { streamUrl: twiml ? streamOf(parseTwiml(twiml).children[0]!)!.url : '', amd: c.createParams.get('MachineDetection') ?? undefined, record: c.createParams.get('Record') === 'true' };
    },
    recordingSent: () => c.callbacks.some((x) => x.kind === 'recording' && x.status === 200),
  };
}

async function placeInbound(h: TelephonyHarness, to: string, from: string, forge = false): Promise<{ status: number; view?: SimView }> {
  if (h.carrier === 'telnyx') {
    const c = await h.telnyx!.placeInboundCall({ webhookUrl: h.inboundUrl(), from, to, connectionId: h.accountSid, behaviour: { link: LINK }, forge });
    const status = c.callbacks[0]!.status;
    return { status, view: status === 200 ? viewOf(h, c.callControlId) : undefined };
  }
  // Forged: SignalWire signed with the API token instead of the project's signing key; Twilio with a key not the account's.
  const forgedKey = h.carrier === 'signalwire' ? h.authToken : 'not-the-auth-token';
  const c = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from, to, accountSid: h.accountSid, authToken: forge ? forgedKey : undefined, behaviour: { link: LINK } });
  const status = c.callbacks[0]!.status;
  return { status, view: status === 200 ? viewOf(h, c.sid) : undefined };
}

/** A status callback / event for `callId` signed by someone else: must be refused. */
async function forgedCallback(h: TelephonyHarness, callId: string, sid: string): Promise<number> {
  const base = `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${callId}`;
  if (h.carrier === 'telnyx') {
    const c = h.telnyx!.calls.get(sid)!;
    return (await h.telnyx!.event(c, 'call.hangup', { hangup_cause: 'normal_clearing' }, true, `${base}/events/telnyx`)).status;
  }
  const params = { CallSid: sid, CallStatus: 'completed', AccountSid: h.accountSid };
  const header = h.carrier === 'signalwire' ? 'x-signalwire-signature' : 'x-twilio-signature';
  const key = h.carrier === 'signalwire' ? h.authToken : 'not-the-auth-token';
  const res = await fetch(`${base}/status`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded', [header]: computeSignature(key, `${base}/status`, params) },
    body: new URLSearchParams(params).toString(),
  });
  return res.status;
}

const CARRIERS: HarnessCarrier[] = ['twilio', 'signalwire', 'telnyx'];

describe.each(CARRIERS)('%s', (carrier) => {
  let h: TelephonyHarness;
  const INBOUND = '+14155551101';
  const OUTBOUND = '+14155551102';
  const AMD_NUMBER = '+14155551103';
  const CALLER = '+14155551199';
  let inboundAgent = '';
  let outboundAgent = '';
  let amdAgent = '';
  let n = 0;
  const callee = () => `+1415556${String(1000 + n++).padStart(4, '0')}`;

  beforeAll(async () => {
    // The deployment's account too: an unbound number has no agent, so only it can refuse the call (Telnyx: by REST).
    h = await startTelephonyHarness({ script: simDemoScript, carrier, envAccount: true });
    inboundAgent = await h.createAgent({ number: INBOUND, direction: 'inbound' });
    outboundAgent = await h.createAgent({ number: OUTBOUND, direction: 'both', metadata: { record_calls: true } });
    amdAgent = await h.createAgent({ number: AMD_NUMBER, direction: 'outbound', welcome: 'hello there', metadata: { amd_enabled: true, amd_policy: 'hangup_on_machine' } });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  async function dial(agent: string, to: string, extra: Record<string, unknown> = {}) {
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agent, to_number: to, ...extra });
    if (res.status !== 200) throw new Error(`outbound: ${res.status} ${JSON.stringify(res.body)}`);
    if (carrier === 'telnyx') await h.telnyx!.waitForCall((c) => c.callControlId === res.body.provider_call_sid);
    else await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
    return { body: res.body, view: viewOf(h, res.body.provider_call_sid) };
  }

  it('inbound: two turns, a barge-in with clear, a key press, hang-up, complete record', { timeout: 90_000 }, async () => {
    const { status, view } = await placeInbound(h, INBOUND, CALLER);
    expect(status).toBe(200);
    const media = await view!.media;
    expect(media.o.url.startsWith(`ws://127.0.0.1:${h.engine.port}/api/v1/voice/ws/${carrier}/`)).toBe(true);
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome');
    const list = await h.call('GET', '/telephony/calls');
    const live = (list.body.calls as Array<Record<string, unknown>>).find((c) => c.provider_call_sid === view!.sid)!;
    expect(live).toMatchObject({ agent_id: inboundAgent, direction: 'inbound', status: 'in_progress', telephony_provider: carrier, from_number: CALLER });
    const callId = live.call_id as string;
    const sessionId = live.session_id as string;

    await media.say('what time do you open');
    await media.waitUntil(() => media.heard.includes('you said: what time do you open.'), 15_000, 'turn 1 reply');

    await media.say('give me the long version');
    await media.waitUntil(() => media.events.filter((e) => e.kind === 'audio_start').length >= 3, 10_000, 'long answer playing');
    await sleep(1500);
    expect(media.clears).toBe(0);
    void media.say('stop');
    await media.waitUntil(() => media.clears >= 1, 10_000, 'clear');
    await media.waitUntil(() => media.heard.includes('you said: stop.'), 15_000, 'reply after the barge-in');

    // DTMF: the key reaches the agent as the caller's text.
    media.pressDigit('4');
    await media.waitUntil(() => media.heard.some((t) => t.includes('caller pressed 4')), 15_000, 'reply to the key press');

    media.hangup();
    await view!.ended;
    await until(() => !h.engine.calls.has(sessionId), 5000, 'engine call closed');
    await until(async () => (await h.call('GET', `/telephony/calls/${callId}`)).status === 404, 5000, 'call gone');
    const cap = h.captured.get(sessionId)!;
    await until(() => cap.end !== undefined, 5000, 'call end recorded');
    expect(cap.turns.map((t) => t.user_text)).toEqual(expect.arrayContaining(['what time do you open', '[caller pressed 4]']));
    const stats = (cap.turns[0]!.metadata as { transport: { jitter: { received: number }; invalidFrames: number } }).transport;
    expect(stats.jitter.received).toBeGreaterThan(50);
    expect(stats.invalidFrames).toBe(0);
  });

  it('refuses a call to an unbound number: a spoken message, then hang-up (Telnyx: answer, speak, hang up on its end)', { timeout: 20_000 }, async () => {
    const { status, view } = await placeInbound(h, '+14155551188', CALLER);
    expect(status).toBe(200);
    await view!.ended;
    const said = carrier === 'telnyx' ? h.telnyx!.calls.get(view!.sid)!.said : h.sim.calls.get(view!.sid)!.said;
    expect(said).toEqual(['Sorry, the number you have called is not in service. Goodbye.']);
    if (carrier === 'telnyx') expect(h.telnyx!.calls.get(view!.sid)!.hangupCause).toBe('normal_clearing');
  });

  it('refuses a forged inbound webhook (403, no call)', { timeout: 20_000 }, async () => {
    const before = (await h.call('GET', '/telephony/calls')).body.count as number;
    const { status } = await placeInbound(h, INBOUND, CALLER, true);
    expect(status).toBe(403);
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(before);
  });

  it('outbound without telephony_provider: detected from the credentials; status callbacks, recording, hang-up', { timeout: 60_000 }, async () => {
    const to = callee();
    h.callees.set(to, { link: LINK });
    const { body, view } = await dial(outboundAgent, to);
    expect(body).toMatchObject({ telephony_provider: carrier, status: 'initiated', from_number: OUTBOUND });
    expect(view.dialed().streamUrl.startsWith(`ws://127.0.0.1:${h.engine.port}/api/v1/voice/ws/${carrier}/${body.call_id}`)).toBe(true);
    expect(view.dialed().record).toBe(true);
    const media = await view.media;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).body.status === 'in_progress', 5000, 'answered status applied');
    // A forged status callback changes nothing.
    expect(await forgedCallback(h, body.call_id, view.sid)).toBe(403);
    expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).status).toBe(200);

    await media.say('is this the right number');
    await media.waitUntil(() => media.heard.includes('you said: is this the right number.'), 15_000, 'reply');
    media.hangup();
    await view.ended;
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
    await until(() => view.recordingSent(), 5000, 'recording callback accepted');
  });

  it('AMD hangup_on_machine: a machine verdict drops the call at the carrier', { timeout: 40_000 }, async () => {
    const to = callee();
    h.callees.set(to, { answeredBy: 'machine_start', amdDelayMs: 2500 });
    const { body, view } = await dial(amdAgent, to);
    expect(view.dialed().amd).toBe(carrier === 'telnyx' ? 'detect' : 'Enable');
    const media = await view.media;
    await media.waitUntil(() => media.heard.length > 0, 15_000, 'greeting');
    expect(media.heard[0]).toBe('hello there');
    await view.ended;
    const cap = h.captured.get(body.session_id)!;
    await until(() => cap.end !== undefined, 5000, 'call end recorded');
    expect(cap.end!.reason).toBe('answering_machine');
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
  });

  it('AMD human: the verdict is recorded and the call goes on', { timeout: 40_000 }, async () => {
    const to = callee();
    h.callees.set(to, { answeredBy: 'human', amdDelayMs: 300 });
    const { body, view } = await dial(amdAgent, to);
    const media = await view.media;
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).body.amd_verdict === 'human', 5000, 'verdict');
    await media.say('are you a robot');
    await media.waitUntil(() => media.heard.includes('you said: are you a robot.'), 15_000, 'conversation goes on');
    media.hangup();
    await view.ended;
  });

  it('transfer: the carrier bridges the human, the AI drops off, the call ends with the leg', { timeout: 40_000 }, async () => {
    const to = callee();
    const { body, view } = await dial(outboundAgent, to);
    const media = await view.media;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
    const res = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155559999' });
    expect(res.status).toBe(200);
    await until(() => !h.engine.calls.has(body.session_id), 5000, 'AI dropped off');
    await until(() => view.transferredTo() === '+14155559999', 3000, 'dialled');
    await view.ended;
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone after the transferred leg');
  });

  it('end by API hangs up at the carrier', { timeout: 30_000 }, async () => {
    const to = callee();
    const { body, view } = await dial(outboundAgent, to);
    const media = await view.media;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
    const res = await h.call('POST', `/telephony/calls/${body.call_id}/end`);
    expect(res.body).toMatchObject({ status: 'ended', message: 'call ended' });
    await view.ended;
    await until(() => !h.engine.calls.has(body.session_id), 5000, 'engine call closed');
  });
});

describe('telnyx with PCMA', () => {
  let h: TelephonyHarness;
  const NUMBER = '+14155551201';

  beforeAll(async () => {
    h = await startTelephonyHarness({ script: simDemoScript, carrier: 'telnyx', codec: 'pcma' });
    await h.createAgent({ number: NUMBER, direction: 'inbound' });
  }, 60_000);

  afterAll(async () => {
    await h?.close();
  });

  it('inbound A-law call: turns and a barge-in with clear', { timeout: 60_000 }, async () => {
    const { status, view } = await placeInbound(h, NUMBER, '+14155551299');
    expect(status).toBe(200);
    const media = await view!.media;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome');
    await media.say('what time do you open');
    await media.waitUntil(() => media.heard.includes('you said: what time do you open.'), 15_000, 'reply');
    await media.say('give me the long version');
    await media.waitUntil(() => media.events.filter((e) => e.kind === 'audio_start').length >= 3, 10_000, 'long answer playing');
    await sleep(1000);
    void media.say('stop');
    await media.waitUntil(() => media.clears >= 1, 10_000, 'clear');
    await media.waitUntil(() => media.heard.includes('you said: stop.'), 15_000, 'reply after the barge-in');
    media.hangup();
    await view!.ended;
  });
});
