/**
 * One short inbound carrier call through the telephony harness: the welcome, one caller turn and
 * its reply, then the caller hangs up; and the conversation record once the engine completed it.
 */
import { expect } from 'vitest';
import type { TelephonyHarness } from '../carrier-sim/harness.js';
import { parseTwiml, streamOf, type CarrierSim, type MediaStreamCall, type SimCall } from '../carrier-sim/index.js';

export interface PlacedInbound {
  call: SimCall;
  media: MediaStreamCall;
  sessionId: string;
  callId: string;
  /** Port of the engine node the stream went to. */
  port: number;
}

/**
 * An inbound call through the simulator to `webhookUrl` (the control plane's inbound route, or a
 * load balancer in front of several), resolved once its media stream to the engine is up.
 */
export async function placeInbound(sim: CarrierSim, o: { webhookUrl: string; from: string; to: string; accountSid: string }): Promise<PlacedInbound> {
  const call = await sim.placeInboundCall(o);
  const connect = call.twiml[0] ? parseTwiml(call.twiml[0]).children.find((c) => c.name === 'Connect') : undefined;
  const stream = connect && streamOf(connect);
  if (!stream) throw new Error(`inbound call not connected to a stream: ${call.status} ${call.twiml[0] ?? ''}`);
  return { call, media: await call.mediaReady, sessionId: stream.parameters.session_id!, callId: stream.parameters.call_id!, port: Number(new URL(stream.url).port) };
}

export async function inboundCallOnce(h: TelephonyHarness, o: { to: string; from: string; welcome: string; words: string; callerName?: string }): Promise<{ callId: string; sessionId: string }> {
  const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: o.from, to: o.to, accountSid: h.accountSid, callerName: o.callerName });
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
