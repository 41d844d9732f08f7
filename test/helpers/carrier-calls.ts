/**
 * One short inbound carrier call through the telephony harness: the welcome, one caller turn and
 * its reply, then the caller hangs up; and the conversation record once the engine completed it.
 */
import { expect } from 'vitest';
import type { TelephonyHarness } from '../carrier-sim/harness.js';
import { parseTwiml, streamOf } from '../carrier-sim/index.js';

export async function inboundCallOnce(h: TelephonyHarness, o: { to: string; from: string; welcome: string; words: string }): Promise<{ callId: string; sessionId: string }> {
  const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: o.from, to: o.to, accountSid: h.accountSid });
  const stream = streamOf(parseTwiml(call.twiml[0]!).children.find((c) => c.name === 'Connect')!)!;
  const media = await call.mediaReady;
  await media.waitUntil(() => media.heard.includes(o.welcome), 10_000, 'welcome');
  await media.say(o.words);
  await media.waitUntil(() => media.heard.length >= 2, 15_000, 'the reply');
  media.hangup();
  await call.ended;
  return { callId: stream.parameters.call_id!, sessionId: stream.parameters.session_id! };
}

/** The conversation id of a session, once its record is `completed`. */
export async function completedConversation(h: TelephonyHarness, sessionId: string): Promise<string> {
  const read = async () => (await h.call('GET', `/conversations/by-session/${sessionId}`)).body?.data;
  await expect.poll(async () => (await read())?.status, { timeout: 20_000, interval: 200 }).toBe('completed');
  return (await read()).id;
}
