/**
 * Issue 21, `transcribe_human_segment` beyond Twilio (portal.transcribe.test.ts): on SignalWire,
 * Telnyx, Plivo and Vonage a simulated call is handed to a person over the presence socket, the
 * carrier simulator records the person's leg as the real carrier does when the hand-off asks it to
 * (two channels as WAV; a dial that forgets either gets a mono mix or an MP3, which would not read
 * as caller and person), names the recording the carrier's way (SignalWire in the `<Dial action>`;
 * Telnyx `call.recording.saved` after the hang-up; Plivo's `<Record>` callback, here before the
 * Dial action; Vonage's `record` event after the call), signed like the real one, and serves it
 * behind the carrier's auth (SignalWire: public, as documented; Telnyx: a pre-signed link, refused
 * when tampered with or sent with an API key; Plivo: the account's basic auth; Vonage: the
 * application JWT). The segment ends with the caller's lines as `user` and the person's as
 * `assistant`, once, and a recording callback signed with the wrong key is refused while the
 * transcript waits for the real one.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import type { CalleeBehaviour } from '../carrier-sim/carrier.js';
import { StreamCarrierSim } from '../carrier-sim/stream-carrier.js';
import { signedPost } from '../carrier-sim/stream-carrier-docs.js';
import { accountFor } from '../carrier-sim/stream-suite.js';
import { computeSignature } from '../../control-plane/telephony/signature.js';
import { humanOnPresence, type PresenceClient } from '../helpers/presence-client.js';
import { acceptOffer, backToAvailable, dualRecording, HANDOFF_LINES, HANDOFF_MESSAGES, HANDOFF_SCRIPT, portalAgent, segmentOf, TRANSCRIBE_JOBS } from '../helpers/handoff-transcripts.js';

type Carrier = 'signalwire' | 'telnyx' | 'plivo' | 'vonage';

interface Media {
  heard: string[];
  say(text: string): Promise<void>;
  waitUntil(pred: () => boolean, timeoutMs: number, what?: string): Promise<void>;
}

/** One carrier in front of the platform, as the suite drives it. */
interface Rig {
  h: TelephonyHarness;
  /** SignalWire and Telnyx: the agent binding carries the account; Plivo and Vonage: the environment. */
  withAccount: boolean;
  /** The agent calls a fresh number answered with `b`; the call once its media is up. */
  place(agentId: string, b: CalleeBehaviour): Promise<{ callId: string; media: Media; ended: Promise<unknown>; sim: unknown }>;
  /** The recording downloads the carrier (or its media store) saw. */
  downloads(): Array<{ status: number }>;
  /** A download of the recording as someone without the account's credentials tries it: the carrier's answer. */
  anonymousDownload(url: string): Promise<number>;
  /** When a forged recording callback could still change something: during the leg, or after the call ended. */
  forgeWhen: 'leg' | 'ended';
  /** A callback naming `url` as the person's leg's recording, signed with the wrong key: our answer's status. */
  forge(callId: string, sim: unknown, url: string): Promise<number>;
  close(): Promise<void>;
}

const OUTBOUND = { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' };
const FORGED_URL = 'http://127.0.0.1:9/forged-recording.wav';
let nextNumber = 900;
const callee = () => `+1415555${String(nextNumber++).padStart(4, '0')}`;
const eventsUrl = (h: TelephonyHarness, callId: string, carrier: string) => `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${callId}/events/${carrier}?leg=person`;

/** The agent calls a fresh number (answered with `b`) on `provider`; `waitFor` finds the simulator's call. */
async function placeOn<C extends { mediaReady: Promise<Media>; ended: Promise<unknown> }>(h: TelephonyHarness, agentId: string, b: CalleeBehaviour, waitFor: (to: string) => Promise<C>, provider?: string) {
  const to = callee();
  h.callees.set(to, b);
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to, ...(provider ? { telephony_provider: provider } : {}) });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sim = await waitFor(to);
  return { callId: res.body.call_id as string, media: await sim.mediaReady, ended: sim.ended, sim: sim as unknown };
}

async function startRig(carrier: Carrier): Promise<Rig> {
  if (carrier === 'signalwire' || carrier === 'telnyx') {
    // SignalWire's space is the simulator (not *.signalwire.com): the person's SIP URI is the account's template.
    const env = carrier === 'signalwire' ? { ...OUTBOUND, SIGNALWIRE_PERSON_URI: 'sip:{identity}@acme.sip.signalwire.com' } : OUTBOUND;
    const h = await startTelephonyHarness({ carrier, script: HANDOFF_SCRIPT, env, app: { jobs: TRANSCRIBE_JOBS } });
    if (carrier === 'signalwire') {
      return {
        h,
        withAccount: true,
        place: (agentId, b) => placeOn(h, agentId, b, (to) => h.sim.waitForCall((c) => c.to === to)),
        downloads: () => h.sim.requests.filter((r) => r.method === 'GET' && r.path.includes('/Recordings/')),
        anonymousDownload: async (url) => (await fetch(url)).status,
        forgeWhen: 'leg',
        async forge(callId, _sim, url) {
          const target = `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${callId}/dial-complete`;
          const params = { CallSid: 'CA-forged', AccountSid: h.accountSid, DialCallStatus: 'completed', RecordingUrl: url };
          const res = await fetch(target, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', 'x-signalwire-signature': computeSignature(`${h.signingKey}-forged`, target, params) }, body: new URLSearchParams(params) });
          return res.status;
        },
        close: () => h.close(),
      };
    }
    const telnyx = h.telnyx!;
    return {
      h,
      withAccount: true,
      place: (agentId, b) => placeOn(h, agentId, b, (to) => telnyx.waitForCall((c) => c.to === to)),
      downloads: () => telnyx.requests.filter((r) => r.method === 'GET'),
      async anonymousDownload(url) {
        const tampered = new URL(url);
        tampered.searchParams.set('X-Amz-Signature', '0'.repeat(64));
        return (await fetch(tampered)).status;
      },
      forgeWhen: 'ended',
      async forge(callId, sim, url) {
        return (await telnyx.event(sim as never, 'call.recording.saved', { channels: 'dual', recording_urls: { mp3: null, wav: url } }, true, eventsUrl(h, callId, 'telnyx'))).status;
      },
      close: () => h.close(),
    };
  }
  const made = accountFor(carrier);
  let h: TelephonyHarness | undefined;
  const sim = new StreamCarrierSim({ wire: carrier, account: made.account, callee: (to) => h?.callees.get(to) ?? {} });
  await sim.start();
  h = await startTelephonyHarness({ script: HANDOFF_SCRIPT, env: { ...made.env(sim.url), ...OUTBOUND }, app: { jobs: TRANSCRIBE_JOBS } });
  const harness = h;
  return {
    h,
    withAccount: false,
    place: (agentId, b) => placeOn(harness, agentId, b, (to) => sim.waitForCall((c) => c.to === to), carrier),
    downloads: () => sim.requests.filter((r) => r.method === 'GET'),
    anonymousDownload: async (url) => (await fetch(url)).status,
    forgeWhen: 'ended',
    async forge(callId, call, url) {
      const body = carrier === 'plivo' ? { CallUUID: (call as { sid: string }).sid, RecordUrl: url, RecordingID: 'forged', RecordingDuration: '7' } : { recording_url: url, recording_uuid: 'forged', timestamp: new Date().toISOString() };
      return (await signedPost(carrier, made.account, eventsUrl(harness, callId, carrier), body, true)).status;
    },
    async close() {
      await sim.close();
      await harness.close();
    },
  };
}

describe.each<Carrier>(['signalwire', 'telnyx', 'plivo', 'vonage'])('%s: the human segment transcribed from the carrier\'s recording', (carrier) => {
  let rig: Rig;
  let agentId = '';
  let humanId = '';
  let presence: PresenceClient;
  const segment = () => segmentOf(rig.h);

  beforeAll(async () => {
    rig = await startRig(carrier);
    agentId = await portalAgent(rig.h, { number: '+14155550901', transcribe: true, withAccount: rig.withAccount });
    ({ humanId, presence } = await humanOnPresence(rig.h, { displayName: 'Tove' }));
  }, 90_000);

  afterAll(async () => {
    presence?.ws.close();
    await rig?.close();
  });

  /** A call of the agent handed to the person (accepted over the presence socket). */
  async function handedOff(b: CalleeBehaviour) {
    const call = await rig.place(agentId, b);
    await call.media.waitUntil(() => call.media.heard.includes('hello caller'), 10_000, 'greeting');
    await call.media.say('I want to talk to a person');
    const conversationId = await acceptOffer(presence, call.callId);
    return { ...call, conversationId };
  }

  it('records the person\'s leg in two channels, names and serves it the carrier\'s way; caller lines are user, the person\'s assistant, once', { timeout: 60_000 }, async () => {
    // Plivo's recording callback comes before the leg's end is reported (the call is still live then).
    // Downloads counted from here: a retried attempt (realtime project) finds the first one's.
    const downloadsBefore = rig.downloads().length;
    const call = await handedOff({ dialDurationMs: 1000, dialRecording: dualRecording(7, HANDOFF_LINES), dialRecordingNotReadyGets: 1, dialRecordingDelayMs: carrier === 'plivo' ? 0 : 100 });
    await call.ended;
    await segment().settles(call.conversationId, 'completed');
    const msgs = await segment().messages(call.conversationId);
    expect(msgs.map((m) => [m.role, m.content, m.turn_number, m.metadata.speaker])).toEqual(HANDOFF_MESSAGES);
    const row = await segment().handoff(call.conversationId);
    expect(row).toMatchObject({ carrier, transcription_status: 'completed' });
    expect(msgs[0]!.metadata).toMatchObject({ human_agent_id: humanId, channel: 2, source: 'recording', recording_sid: row.recording_sid });
    expect(msgs[1]!.metadata).toMatchObject({ channel: 1, speaker: 'caller' });
    // Not there at the first try, then downloaded once, with what the carrier asks for.
    expect(rig.downloads().slice(downloadsBefore).map((d) => d.status)).toEqual([404, 200]);
    expect(await rig.anonymousDownload(row.recording_url!)).toBe({ signalwire: 200, telnyx: 403, plivo: 401, vonage: 401 }[carrier]);
    // A duplicate job (at least once delivery) writes nothing twice.
    const again = await rig.h.app.jobs.enqueue('portal.transcribe', { handoff_id: row.id }, { singletonKey: `again-${row.id}` });
    await expect.poll(async () => (await rig.h.app.jobs.state('portal.transcribe', again!))?.state, { timeout: 10_000, interval: 100 }).toBe('completed');
    expect(await segment().messages(call.conversationId)).toHaveLength(3);
    await backToAvailable(rig.h, presence, humanId);
  });

  it('a recording callback signed with the wrong key is refused while the transcript waits for the real one', { timeout: 60_000 }, async () => {
    // A long leg (SignalWire names the recording when it ends) and a late recording (the others).
    const call = await handedOff({ dialDurationMs: rig.forgeWhen === 'leg' ? 3000 : 800, dialRecording: dualRecording(7, HANDOFF_LINES), dialRecordingDelayMs: 3000 });
    if (rig.forgeWhen === 'ended') await call.ended;
    expect(await rig.forge(call.callId, call.sim, FORGED_URL)).toBe(403);
    expect((await segment().handoff(call.conversationId)).recording_url).toBeNull();
    await call.ended;
    await segment().settles(call.conversationId, 'completed');
    const row = await segment().handoff(call.conversationId);
    expect(row.recording_url).not.toBe(FORGED_URL);
    expect(new URL(row.recording_url!).port).not.toBe('9');
    expect((await segment().messages(call.conversationId)).map((m) => m.content)).toEqual(HANDOFF_MESSAGES.map((m) => m[1]));
    await backToAvailable(rig.h, presence, humanId);
  });
});
