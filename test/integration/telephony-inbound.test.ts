/**
 * Inbound calls end to end through the carrier simulator: the voice webhook answers TwiML that
 * connects the call to the engine node holding its session; the caller holds a two-turn
 * conversation with a barge-in (`clear` observed at the carrier), hangs up, and the conversation
 * record is complete. Also: refused direction, unknown number, a forged signature, and hold while
 * the workspace has no free seat.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { simDemoScript } from '../../shared/providers/llm/sim.js';
import type { TwilioTransportStats } from '../../media-engine/transports/twilio.js';
import { parseTwiml, streamOf } from '../carrier-sim/index.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';

let h: TelephonyHarness;
const NUMBER = '+14155550101';
const OUTBOUND_ONLY = '+14155550102';
const ONE_SEAT = '+14155550103';
const INACTIVE = '+14155550104';
const CALLER = '+14155550199';
let agentId = '';
let inactiveId = '';

beforeAll(async () => {
  h = await startTelephonyHarness({ script: simDemoScript });
  agentId = await h.createAgent({ number: NUMBER, direction: 'inbound' });
  await h.createAgent({ number: OUTBOUND_ONLY, direction: 'outbound' });
  inactiveId = await h.createAgent({ number: INACTIVE, inactive: true });
  // Seats are per workspace: this agent lives in a workspace of its own.
  await h.createAgent({ number: ONE_SEAT, metadata: { max_concurrent_calls: 1 }, welcome: 'seat taken', owner: await h.newUser() });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(25);
  }
}

describe('inbound calls', () => {
  it('answers a bound number: two turns, a barge-in, hang-up, complete conversation record', { timeout: 90_000 }, async () => {
    const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: NUMBER, accountSid: h.accountSid });
    // The TwiML: a stream on the engine node chosen for the session, with the session's parameters.
    const doc = parseTwiml(call.twiml[0]!);
    const stream = streamOf(doc.children.find((c) => c.name === 'Connect')!)!;
    expect(stream.url).toBe(`ws://127.0.0.1:${h.engine.port}/api/v1/voice/ws/twilio/${call.sid}`);
    expect(Object.keys(stream.parameters).sort()).toEqual(['agent_id', 'call_id', 'session_id']);
    expect(stream.parameters.agent_id).toBe(agentId);
    expect(doc.children.map((c) => c.name)).toEqual(['Connect', 'Hangup']);

    const media = await call.mediaReady;
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome');

    const list = await h.call('GET', '/telephony/calls');
    expect(list.status).toBe(200);
    expect(list.body.count).toBe(1);
    expect(list.body.calls[0]).toMatchObject({
      call_id: stream.parameters.call_id,
      session_id: stream.parameters.session_id,
      agent_id: agentId,
      direction: 'inbound',
      status: 'in_progress',
      to_number: NUMBER,
      from_number: CALLER,
      telephony_provider: 'twilio',
      provider_call_sid: call.sid,
    });

    // Turn 1.
    await media.say('what time do you open');
    await media.waitUntil(() => media.heard.includes('you said: what time do you open.'), 15_000, 'turn 1 reply');

    // Turn 2: a long answer, interrupted by the caller; the engine clears the carrier's buffer.
    const heardBefore = media.heard.length;
    await media.say('give me the long version');
    await media.waitUntil(() => media.events.filter((e) => e.kind === 'audio_start').length >= 3, 10_000, 'long answer playing');
    await sleep(1500);
    expect(media.clears).toBe(0);
    void media.say('stop');
    await media.waitUntil(() => media.clears >= 1, 10_000, 'clear');
    await media.waitUntil(() => media.heard.includes('you said: stop.'), 15_000, 'turn 3 reply');
    // Nothing of the interrupted answer was decoded as a whole phrase after the clear.
    expect(media.heard.slice(heardBefore).filter((t) => t.startsWith('sure, here is the long version') && t.endsWith('know?'))).toEqual([]);
    // The marks pending at the clear were echoed at once (treated as cleared by the engine).
    const clearAt = media.events.find((e) => e.kind === 'clear')!.atMs;
    expect(media.events.some((e) => e.kind === 'mark_echoed' && e.atMs >= clearAt)).toBe(true);

    media.hangup();
    await call.ended;
    const sessionId = stream.parameters.session_id!;
    await until(() => !h.engine.calls.has(sessionId), 5000, 'engine call closed');
    // No carrier status callback for inbound calls: the registry notices the session is gone.
    await until(async () => (await h.call('GET', '/telephony/calls')).body.count === 0, 5000, 'call left the registry');
    expect((await h.call('GET', `/telephony/calls/${stream.parameters.call_id}`)).status).toBe(404);

    // Turn telemetry carries the jitter-buffer counters.
    const cap = h.captured.get(sessionId)!;
    expect(cap.turns.map((t) => t.user_text)).toEqual(['what time do you open', 'give me the long version', 'stop']);
    expect(cap.turns.map((t) => t.interrupted)).toEqual([false, true, false]);
    const stats = (cap.turns[0]!.metadata as { transport: TwilioTransportStats }).transport;
    expect(stats.jitter.received).toBeGreaterThan(50);
    expect(stats.clears).toBe(0);
    expect((cap.turns[2]!.metadata as { transport: TwilioTransportStats }).transport.clears).toBe(1);

    // The durable conversation record (engine writer).
    await h.writer.flush();
    const [conv] = await h.infra.sql`select * from conversations where session_id = ${sessionId}`;
    expect(conv).toMatchObject({ status: 'completed', call_id: stream.parameters.call_id, agent_id: agentId, total_turns: 3 });
    expect((conv!.metadata as Record<string, unknown>).call_direction).toBe('inbound');
    expect((conv!.metadata as Record<string, unknown>).end_reason).toBe('stream_stopped');
    // When telephony took the call (call.completed's started_at): before the media connected.
    const placed = Date.parse(String((conv!.metadata as Record<string, unknown>).call_started_at));
    expect(placed).toBeLessThanOrEqual(new Date(conv!.started_at as Date).getTime());
    const msgs = await h.infra.sql`select turn_number, role, content from messages where conversation_id = ${conv!.id} order by turn_number, created_at`;
    expect(msgs.map((m) => `${m.turn_number}:${m.role}:${m.content}`)).toEqual([
      // The welcome is an agent message before the first turn (issue 22).
      '0:assistant:hello caller',
      '1:user:what time do you open',
      '1:assistant:You said: what time do you open.',
      '2:user:give me the long version',
      // What the caller heard before the barge-in: a prefix of the long answer.
      expect.stringMatching(/^2:assistant:Sure,/),
      '3:user:stop',
      '3:assistant:You said: stop.',
    ]);
    const long = simDemoScript.rules.find((r) => r.when === 'long')!.reply!;
    expect(long.length).toBeGreaterThan((msgs[4]!.content as string).length * 2);
  });

  it('refuses a number whose agent only calls out: a spoken message, then hang up', async () => {
    const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: OUTBOUND_ONLY, accountSid: h.accountSid });
    expect(call.callbacks[0]).toMatchObject({ status: 200 });
    expect(await call.ended).toBe('completed');
    expect(call.said).toEqual(['Sorry, this number does not take incoming calls. Goodbye.']);
    expect(call.media).toBeUndefined();
  });

  it('an agent published inactive takes no call: inbound refused as not in service, outbound and browser starts 409', async () => {
    const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: INACTIVE, accountSid: h.accountSid });
    expect(await call.ended).toBe('completed');
    expect(call.said).toEqual(['Sorry, the number you have called is not in service. Goodbye.']);
    expect(call.media).toBeUndefined();

    const out = await h.call('POST', '/telephony/calls/outbound', { agent_id: inactiveId, to_number: '+14155551377' });
    expect(out.status).toBe(409);
    expect(JSON.stringify(out.body)).toMatch(/is inactive/);
    const start = await h.call('POST', '/voice/sessions/start', { agent_id: inactiveId });
    expect(start.status).toBe(409);
    expect(start.body.error.message).toMatch(/is inactive/);
    // No seat is held by the refused dials.
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);
  });

  it('refuses an unknown number', async () => {
    const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: '+14155550999', accountSid: h.accountSid });
    expect(await call.ended).toBe('completed');
    expect(call.said).toEqual(['Sorry, the number you have called is not in service. Goodbye.']);
    expect(call.twiml[0]).toMatch(/<Say>.*<\/Say><Hangup\/><\/Response>$/);
  });

  it('refuses a webhook with a forged signature (the agent has a token)', async () => {
    const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: NUMBER, accountSid: h.accountSid, authToken: 'not-the-token' });
    expect(call.callbacks[0]).toMatchObject({ kind: 'webhook', status: 403 });
    expect(JSON.parse(call.callbacks[0]!.body).error.code).toBe('FORBIDDEN');
    expect(await call.ended).toBe('failed');
  });

  it('holds a caller while the workspace has no free seat, then connects when one frees', { timeout: 40_000 }, async () => {
    const first = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: ONE_SEAT, accountSid: h.accountSid });
    const m1 = await first.mediaReady;
    await m1.waitUntil(() => m1.heard.includes('seat taken'), 10_000, 'first call greeted');

    const second = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: '+14155550198', to: ONE_SEAT, accountSid: h.accountSid });
    const hold = parseTwiml(second.twiml[0]!);
    expect(hold.children.map((c) => c.name)).toEqual(['Say', 'Pause', 'Redirect']);
    expect(hold.children[2]!.text).toMatch(/\/api\/v1\/telephony\/calls\/inbound\?hold=1$/);
    await until(() => second.callbacks.filter((c) => c.kind === 'redirect').length >= 3, 10_000, 'hold rounds');
    expect(second.media).toBeUndefined();
    // Only the first round announces; later rounds just wait.
    expect(second.said).toEqual(['All of our agents are busy right now. Please hold and we will be with you shortly.']);

    m1.hangup();
    const m2 = await second.mediaReady;
    await m2.waitUntil(() => m2.heard.includes('seat taken'), 15_000, 'second call greeted');
    m2.hangup();
    await second.ended;
  });
});
