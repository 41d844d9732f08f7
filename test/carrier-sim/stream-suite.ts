/**
 * The call scenarios of the Twilio telephony tests, run for one of Plivo, Vonage or Exotel against
 * its simulator (stream-carrier.ts), through the real control plane and engine
 * (`startTelephonyHarness`, the carrier's account from its environment variables): inbound with two
 * turns, a barge-in (`clear` at the carrier), DTMF and hang-up; outbound with status callbacks and
 * hang-up by API; AMD verdicts and transfer where the carrier has them (refused where it does not);
 * recording; forged webhooks and callbacks refused. Used by test/integration/telephony-<carrier>.test.ts.
 */
import { generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simDemoScript } from '../../shared/providers/llm/sim.js';
import type { CalleeBehaviour } from './carrier.js';
import { startTelephonyHarness, type TelephonyHarness } from './harness.js';
import type { StreamWireName } from './stream-call.js';
import { StreamCarrierSim, type StreamSimAccount } from './stream-carrier.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(25);
  }
}

export function accountFor(wire: StreamWireName): { account: StreamSimAccount & { privateKey?: string }; env: (url: string) => Record<string, string> } {
  if (wire === 'plivo') {
    const account = { id: `MA${randomBytes(9).toString('hex').toUpperCase()}`, secret: randomBytes(16).toString('hex') };
    return { account, env: (url) => ({ PLIVO_API_BASE_URL: url, PLIVO_AUTH_ID: account.id, PLIVO_AUTH_TOKEN: account.secret }) };
  }
  if (wire === 'vonage') {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const account = { id: randomBytes(4).toString('hex'), secret: randomBytes(16).toString('hex'), key: randomUUID(), publicKey, privateKey };
    return { account, env: (url) => ({ VONAGE_API_BASE_URL: url, VONAGE_API_KEY: account.id, VONAGE_SIGNATURE_SECRET: account.secret, VONAGE_APPLICATION_ID: account.key, VONAGE_PRIVATE_KEY: privateKey }) };
  }
  const account = { id: `acct${randomBytes(4).toString('hex')}`, secret: randomBytes(16).toString('hex'), key: randomBytes(8).toString('hex') };
  return { account, env: (url) => ({ EXOTEL_API_BASE_URL: url, EXOTEL_ACCOUNT_SID: account.id, EXOTEL_API_KEY: account.key, EXOTEL_API_TOKEN: account.secret }) };
}

export function defineStreamCarrierSuite(wire: StreamWireName, caps: { amd: boolean; transfer: boolean }): void {
  let h: TelephonyHarness;
  let sim: StreamCarrierSim;
  let account: StreamSimAccount & { privateKey?: string };
  const callees = new Map<string, CalleeBehaviour>();
  const NUMBER = '+14155550601';
  const CALLER = '+14155550699';
  let agentId = '';
  let nextNumber = 700;
  const callee = () => `+1415555${String(nextNumber++).padStart(4, '0')}`;

  beforeAll(async () => {
    const made = accountFor(wire);
    account = made.account;
    const env = made.env;
    sim = new StreamCarrierSim({ wire, account, callee: (to) => callees.get(to) ?? {} });
    await sim.start();
    h = await startTelephonyHarness({ script: simDemoScript, env: env(sim.url) });
    // No credentials on the binding: the deployment's account of this carrier (its environment) is used.
    agentId = await h.createAgent({ number: NUMBER, direction: 'both', withAccount: false, metadata: { record_calls: true } });
  }, 60_000);

  afterAll(async () => {
    await sim?.close();
    await h?.close();
  });

  const inboundUrl = () => `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/inbound/${wire}`;

  async function dial(agent: string, to: string) {
    const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agent, to_number: to });
    if (res.status !== 200) throw new Error(`outbound: ${res.status} ${JSON.stringify(res.body)}`);
    const call = await sim.waitForCall((c) => c.to === to);
    return { body: res.body, call };
  }

  describe(`${wire}: inbound`, () => {
    it('answers a bound number: two turns, a barge-in with clear, DTMF, hang-up, the turns recorded', { timeout: 90_000 }, async () => {
      const call = await sim.placeInboundCall({ webhookUrl: inboundUrl(), from: CALLER, to: NUMBER });
      expect(call.callbacks[0]!.status).toBe(200);
      const media = await call.mediaReady;
      expect(new URL(media.o.url).pathname).toBe(`/api/v1/voice/ws/${wire}/${call.sid}`);
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome');
      const list = await h.call('GET', '/telephony/calls');
      expect(list.body.calls.find((c: { provider_call_sid: string }) => c.provider_call_sid === call.sid)).toMatchObject({ agent_id: agentId, direction: 'inbound', status: 'in_progress', telephony_provider: wire, to_number: NUMBER, from_number: CALLER });

      await media.say('what time do you open');
      await media.waitUntil(() => media.heard.includes('you said: what time do you open.'), 15_000, 'turn 1 reply');

      // A long answer, interrupted: the engine clears the carrier's buffer.
      await media.say('give me the long version');
      await media.waitUntil(() => media.events.filter((e) => e.kind === 'audio_start').length >= 3, 10_000, 'long answer playing');
      await sleep(1500);
      expect(media.clears).toBe(0);
      void media.say('stop');
      await media.waitUntil(() => media.clears >= 1, 10_000, 'clear');
      await media.waitUntil(() => media.heard.includes('you said: stop.'), 15_000, 'turn 3 reply');

      media.pressDigit('5');
      // The key press is a turn of its own: its reply first, so the next phrase is not taken into
      // the same turn (a loaded machine can delay the press's turn past the phrase's start).
      await media.waitUntil(() => media.heard.some((t) => t.includes('caller pressed 5')), 15_000, 'reply to the key press');
      await media.say('thanks');
      await media.waitUntil(() => media.heard.includes('you said: thanks.'), 15_000, 'turn after the key press');

      // The newest such call: a retried attempt's first call may still be captured.
      const sessionId = [...h.captured.values()].reverse().find((c) => c.turns.some((t) => t.user_text === 'what time do you open'))!.sessionId;
      media.hangup();
      await until(() => !h.engine.calls.has(sessionId), 5000, 'engine call closed');
      const cap = h.captured.get(sessionId)!;
      expect(cap.turns.map((t) => t.user_text).filter((t) => !t.includes('pressed'))).toEqual(['what time do you open', 'give me the long version', 'stop', 'thanks']);
      // Narrowband end to end (Vonage too, by default): the stream and the actor at 8 kHz.
      expect(media.rate).toBe(8000);
      expect(cap.turns[0]!.user_audio_rate_hz).toBe(8000);
      const stats = (cap.turns.at(-1)!.metadata as { transport: { dtmf: number; clears: number; invalidFrames: number } }).transport;
      expect(stats.dtmf).toBe(1);
      expect(stats.invalidFrames).toBe(0);
      expect(cap.turns.reduce((n, t) => n + (t.metadata as { transport: { clears: number } }).transport.clears, 0)).toBeGreaterThanOrEqual(1);
      // The record names this carrier, as the transport hint and as the provider.
      await until(async () => (await h.call('GET', `/conversations/by-session/${sessionId}`)).status === 200, 5000, 'conversation recorded');
      const conv = (await h.call('GET', `/conversations/by-session/${sessionId}`)).body.data;
      expect((conv.conversation ?? conv).metadata).toMatchObject({ connection_type: wire, telephony_provider: wire, call_direction: 'inbound' });
    });

    it('refuses a forged voice webhook (403) and never streams', { timeout: 20_000 }, async () => {
      const call = await sim.placeInboundCall({ webhookUrl: inboundUrl(), from: CALLER, to: NUMBER, forge: true });
      expect(call.callbacks[0]!.status).toBe(403);
      expect(call.media).toBeUndefined();
    });
  });

  describe(`${wire}: outbound`, () => {
    it('dials through the carrier API, talks, hangs up by API; callbacks accepted; the record is gone', { timeout: 60_000 }, async () => {
      const to = callee();
      const { body, call } = await dial(agentId, to);
      expect(body).toMatchObject({ status: 'initiated', to_number: to, from_number: NUMBER, telephony_provider: wire });
      const media = await call.mediaReady;
      expect(new URL(media.o.url).pathname).toBe(`/api/v1/voice/ws/${wire}/${body.call_id}`);
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
      await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).body.status === 'in_progress', 5000, 'in progress');
      await media.say('is this the right number');
      await media.waitUntil(() => media.heard.includes('you said: is this the right number.'), 15_000, 'reply');

      const end = await h.call('POST', `/telephony/calls/${body.call_id}/end`);
      expect(end.status).toBe(200);
      expect(await call.ended).toBe('completed');
      await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
      expect(call.callbacks.length).toBeGreaterThanOrEqual(2);
      expect(call.callbacks.filter((c) => c.status !== 200)).toEqual([]);
      // Recording was asked for (record_calls) and its callback accepted.
      if (wire !== 'exotel') expect(call.recording).toBe(true);
      await until(() => call.callbacks.some((c) => c.kind === 'recording' || (wire === 'exotel' && c.body.RecordingUrl)), 5000, 'recording callback');
    });

    it('refuses a forged status callback (403)', { timeout: 30_000 }, async () => {
      const to = callee();
      const { body, call } = await dial(agentId, to);
      await call.mediaReady;
      const cb = call.callbacks.find((c) => c.kind === 'status' || c.kind === 'answered' || c.kind === 'ringing')!;
      const forged = await sim.post(call, 'forged', cb.url, { ...cb.body }, true);
      expect(forged.status).toBe(403);
      await h.call('POST', `/telephony/calls/${body.call_id}/end`);
      await call.ended;
    });

    it(caps.transfer ? 'transfers to a human; the call ends with the transferred leg' : 'refuses a transfer (not possible by API) and the call goes on', { timeout: 40_000 }, async () => {
      const to = callee();
      const { body, call } = await dial(agentId, to);
      const media = await call.mediaReady;
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
      const res = await h.call('POST', `/telephony/calls/${body.call_id}/transfer`, { to_number: '+14155550777' });
      if (!caps.transfer) {
        expect(res.status).toBeGreaterThanOrEqual(400);
        expect((await h.call('GET', `/telephony/calls/${body.call_id}`)).body.status).toBe('in_progress');
        await h.call('POST', `/telephony/calls/${body.call_id}/end`);
        await call.ended;
        return;
      }
      expect(res.status).toBe(200);
      expect(res.body).toMatchObject({ transferred: true, to_number: '+14155550777' });
      await until(() => call.transferredTo === '+14155550777', 5000, 'carrier dialled the human');
      await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 10_000, 'call gone after the leg');
    });

    it.runIf(caps.amd)('records AMD verdicts (human, machine)', { timeout: 60_000 }, async () => {
      const agent = await h.createAgent({ number: '+14155550602', direction: 'both', withAccount: false, metadata: { amd_enabled: true, amd_policy: 'talk_anyway' } });
      for (const answeredBy of ['human', 'machine_start']) {
        const to = callee();
        callees.set(to, { answeredBy, amdDelayMs: 300 });
        const { body, call } = await dial(agent, to);
        await call.mediaReady;
        const want = answeredBy === 'human' ? 'human' : 'machine';
        await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).body.amd_verdict === want, 10_000, `verdict ${want}`);
        await h.call('POST', `/telephony/calls/${body.call_id}/end`);
        await call.ended;
      }
    });

    it.runIf(wire !== 'exotel')('detects the carrier from the binding credentials when telephony_provider is omitted', { timeout: 30_000 }, async () => {
      // Credentials on the binding; without detection they would be taken for Twilio's (the harness's Twilio simulator).
      const agent = await h.createAgent({ number: '+14155550603', direction: 'both', withAccount: false });
      const put = await h.call('PUT', `/agents/${agent}/telephony`, { carrier_phone_number: '+14155550603', call_direction: 'both', carrier_account_sid: account.id, carrier_auth_token: account.secret });
      expect(put.status).toBe(200);
      expect((await h.call('POST', `/agents/${agent}/versions/publish`)).status).toBeLessThan(300);
      const to = callee();
      const { body, call } = await dial(agent, to);
      expect(body.telephony_provider).toBe(wire);
      await call.mediaReady;
      await h.call('POST', `/telephony/calls/${body.call_id}/end`);
      expect(await call.ended).toBe('completed');
    });

    it('reports an unanswered call and never streams it', { timeout: 20_000 }, async () => {
      const to = callee();
      callees.set(to, { outcome: 'no-answer' });
      const { body, call } = await dial(agentId, to);
      expect(await call.ended).toBe('no-answer');
      expect(call.media).toBeUndefined();
      await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
    });
  });

  describe.runIf(wire === 'vonage')(`${wire}: workspace account`, () => {
    it('stores the application key (a PEM longer than other fields, line breaks escaped) and dials with it', { timeout: 30_000 }, async () => {
      const owner = await h.newUser();
      const pem = account.privateKey!.trim().replace(/\n/g, '\\n');
      expect(pem.length).toBeGreaterThan(512);
      const put = await h.call('PUT', '/call-center/settings', { carriers: { vonage: { account_sid: account.id, auth_token: account.secret, application_id: account.key, private_key: pem } } }, owner.token);
      expect(put.status).toBe(200);
      expect(put.body.data.carriers.vonage.private_key).toMatch(/^••••/);
      const bad = await h.call('PUT', '/call-center/settings', { carriers: { vonage: { private_key: 'not a key' } } }, owner.token);
      expect(bad.status).toBe(400);
      const agent = await h.createAgent({ number: '+14155550604', direction: 'both', withAccount: false, owner });
      const to = callee();
      const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agent, to_number: to }, owner.token);
      expect(res.status).toBe(200);
      expect(res.body.telephony_provider).toBe('vonage');
      const call = await sim.waitForCall((c) => c.to === to);
      await call.mediaReady;
      await h.call('POST', `/telephony/calls/${res.body.call_id}/end`, undefined, owner.token);
      expect(await call.ended).toBe('completed');

      // Wideband for this workspace: the NCCO asks for 16 kHz, the stream and the actor run at it.
      expect((await h.call('PUT', '/call-center/settings', { carriers: { vonage: { sample_rate_hz: '24000' } } }, owner.token)).status).toBe(400);
      const wide = await h.call('PUT', '/call-center/settings', { carriers: { vonage: { sample_rate_hz: '16000' } } }, owner.token);
      expect(wide.status).toBe(200);
      expect(wide.body.data.carriers.vonage).toMatchObject({ sample_rate_hz: '16000', application_id: account.key });
      const to16 = callee();
      const res16 = await h.call('POST', '/telephony/calls/outbound', { agent_id: agent, to_number: to16 }, owner.token);
      expect(res16.status).toBe(200);
      const call16 = await sim.waitForCall((c) => c.to === to16);
      expect(JSON.stringify(call16.request.ncco)).toContain('audio/l16;rate=16000');
      const media16 = await call16.mediaReady;
      expect(media16.rate).toBe(16000);
      await media16.waitUntil(() => media16.heard.includes('hello caller'), 10_000, 'greeting at 16 kHz');
      await media16.say('is this wideband');
      await media16.waitUntil(() => media16.heard.includes('you said: is this wideband.'), 15_000, 'reply at 16 kHz');
      const turn = [...h.captured.values()].flatMap((c) => c.turns).find((t) => t.user_text === 'is this wideband')!;
      expect(turn.user_audio_rate_hz).toBe(16000);
      expect((turn.metadata as { transport: { invalidFrames: number } }).transport.invalidFrames).toBe(0);
      await h.call('POST', `/telephony/calls/${res16.body.call_id}/end`, undefined, owner.token);
      expect(await call16.ended).toBe('completed');
    });
  });

  describe(`${wire}: providers`, () => {
    it('is listed as supported with its capabilities', async () => {
      const p = await h.call('GET', '/telephony/providers');
      expect(p.body.providers.find((x: { name: string }) => x.name === wire)).toMatchObject({ supported: true });
      const c = await h.call('GET', '/telephony/capabilities');
      expect(c.body.carriers.find((x: { provider: string }) => x.provider === wire)).toMatchObject({ supported: true, answering_machine_detection: caps.amd, cold_transfer: caps.transfer, dtmf: true, recording: true });
    });
  });
}
