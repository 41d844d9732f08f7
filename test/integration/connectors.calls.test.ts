/**
 * Issue 18, connector tools on real calls: a carrier call (carrier simulator, real control plane,
 * engine node, Postgres, Redis) to an agent with a Cal.com connector tool whose `phone` is pinned
 * to `{{caller_number}}` and `event_type_id` to 77. The sim LLM calls `calcom__book`; the Cal.com
 * fake receives the booking with the caller's number; the conversation record holds the tool call
 * and its pipeline event. A disconnect during a call gives the model an error result and the call
 * goes on; a call started after the disconnect is not offered the function; a reconnect brings it back.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CATALOG_DATA } from '../../shared/connectors/catalog-data.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import type { SimCall } from '../carrier-sim/carrier.js';
import { parseTwiml, streamOf } from '../carrier-sim/index.js';
import { CalcomFake } from '../fakes/calcom.js';
import { CALCOM_KEY } from '../helpers/connectors.js';

const NUMBER = '+14155550111';
const CALLER = '+14155550177';
const SLOTS = ['2030-03-04T09:00:00.000Z', '2030-03-04T09:30:00.000Z', '2030-03-05T14:00:00.000Z'];

const calcom = new CalcomFake();
let h: TelephonyHarness;
let agentId = '';
let connectionId = '';

/** The model books the first slot not booked yet; its arguments carry no phone and no event type (both pinned). */
const script = {
  rules: [
    {
      when: 'book',
      toolCalls: [{ name: 'calcom__book', arguments: () => ({ start: SLOTS[calcom.bookings.length], name: 'Ann Lee', email: 'ann@example.com' }) }],
      afterTool: 'Done.',
    },
  ],
};

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
async function until(pred: () => boolean | Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error(`${what}: not in time`);
    await sleep(25);
  }
}

beforeAll(async () => {
  await calcom.start();
  calcom.validKeys.add(CALCOM_KEY);
  calcom.slots.set(77, [...SLOTS]);
  h = await startTelephonyHarness({ script, env: { CONNECTOR_CALCOM_BASE_URL: calcom.url, CONNECTOR_TIMEOUT_MS: '5000' } });
  const connected = await h.call('POST', `/connectors/workspace/${h.user.workspaceId}/connect-key/calcom`, { api_key: CALCOM_KEY });
  expect(connected.status, JSON.stringify(connected.body)).toBe(200);
  connectionId = connected.body.id;

  agentId = await h.createAgent({ number: NUMBER, direction: 'inbound' });
  const book = CATALOG_DATA.providers.find((p) => p.id === 'calcom')!.actions.find((a) => a.name === 'book')!;
  const tool = await h.call('POST', `/agents/${agentId}/tools`, {
    name: 'scheduling',
    description: 'Cal.com',
    connector_binding: {
      connection_id: connectionId,
      actions: [{ name: 'calcom__book', description: book.description, parameters: book.parameters, fixed: { event_type_id: 77, phone: '{{caller_number}}' } }],
    },
  });
  expect(tool.status, JSON.stringify(tool.body)).toBe(201);
  const published = await h.call('POST', `/agents/${agentId}/versions/publish`);
  expect(published.status, JSON.stringify(published.body)).toBeLessThan(300);
}, 60_000);

afterAll(async () => {
  await h?.close();
  await calcom.close();
});

/** An inbound call from CALLER, answered (welcome heard). */
async function answeredCall(): Promise<{ call: SimCall; media: Awaited<SimCall['mediaReady']>; sessionId: string }> {
  const call = await h.sim.placeInboundCall({ webhookUrl: h.inboundUrl(), from: CALLER, to: NUMBER, accountSid: h.accountSid });
  const media = await call.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 15_000, 'welcome');
  const stream = streamOf(parseTwiml(call.twiml[0]!).children.find((c) => c.name === 'Connect')!)!;
  const sessionId = stream.parameters.session_id!;
  expect(sessionId).toBeTruthy();
  return { call, media, sessionId };
}

/** Hangs up and answers the durable tool-call rows of the call, oldest first. */
async function hangUpAndRecords(call: SimCall, media: Awaited<SimCall['mediaReady']>, sessionId: string) {
  media.hangup();
  await call.ended;
  await until(() => !h.engine.calls.has(sessionId), 10_000, 'engine call closed');
  await h.writer.flush();
  const [conv] = await h.infra.sql`select id from conversations where session_id = ${sessionId}`;
  expect(conv).toBeTruthy();
  const tools = await h.infra.sql`select tool_name, tool_input, tool_output, status, error_message from tool_calls where conversation_id = ${conv!.id} order by created_at`;
  const events = await h.infra.sql`select provider, status, error_message from pipeline_events where conversation_id = ${conv!.id} and event_type = 'tool'`;
  return { tools, events };
}

describe('connector tools on carrier calls', () => {
  it('books through Cal.com with the caller number pinned by {{caller_number}}, recorded as a tool call', { timeout: 90_000 }, async () => {
    const { call, media, sessionId } = await answeredCall();
    // The session config names the connection and the pinned values, never the credential.
    const stored = await h.infra.registry.sessions.getSession(sessionId);
    const config = stored!.config as SessionConfig;
    expect(config.connector_tools).toEqual([
      expect.objectContaining({ connection_id: connectionId, provider_id: 'calcom', actions: [expect.objectContaining({ name: 'calcom__book', fixed: { event_type_id: 77, phone: '{{caller_number}}' } })] }),
    ]);
    expect(Object.keys((config.connector_tools![0]!.actions[0]!.parameters as { properties: object }).properties)).not.toContain('phone');
    expect(config).toMatchObject({ from_number: CALLER, to_number: NUMBER });
    expect(JSON.stringify(stored)).not.toContain(CALCOM_KEY);

    await media.say('please book me');
    await media.waitUntil(() => media.heard.includes('done.'), 20_000, 'reply after the tool');
    expect(calcom.bookings).toHaveLength(1);
    expect(calcom.bookings[0]).toMatchObject({ start: SLOTS[0], eventTypeId: 77, attendees: [{ name: 'Ann Lee', email: 'ann@example.com', phoneNumber: CALLER }] });
    // The vendor saw the stored key; the session config in the registry never held it.
    expect(calcom.requests.at(-1)!.headers.authorization).toBe(`Bearer ${CALCOM_KEY}`);

    const { tools, events } = await hangUpAndRecords(call, media, sessionId);
    expect(tools).toHaveLength(1);
    expect(tools[0]).toMatchObject({ tool_name: 'calcom__book', status: 'success', error_message: null });
    // The record keeps what the model sent (no pinned value) and what came back.
    expect(tools[0]!.tool_input).toEqual({ start: SLOTS[0], name: 'Ann Lee', email: 'ann@example.com' });
    expect(tools[0]!.tool_output).toMatchObject({ uid: calcom.bookings[0].uid, start: SLOTS[0], status: 'accepted' });
    expect(events).toEqual([expect.objectContaining({ provider: 'calcom__book', status: 'success' })]);
    const [conn] = await h.infra.sql`select health_status from connector_connections where id = ${connectionId}`;
    expect(conn!.health_status).toBe('ok');
    expect(h.infra.logLines.join('')).not.toContain(CALCOM_KEY);
  });

  it('a disconnect during the call: the model reads an error result and the call goes on', { timeout: 90_000 }, async () => {
    const { call, media, sessionId } = await answeredCall();
    const del = await h.call('DELETE', `/connectors/workspace/${h.user.workspaceId}/connections/${connectionId}`);
    expect(del.status, JSON.stringify(del.body)).toBe(200);
    const before = calcom.requests.length;

    await media.say('please book me');
    await media.waitUntil(() => media.heard.includes('done.'), 20_000, 'reply after the failed tool');
    await media.say('thank you');
    await media.waitUntil(() => media.heard.includes('you said: thank you.'), 20_000, 'the call goes on');
    expect(calcom.requests.length).toBe(before);
    expect(calcom.bookings).toHaveLength(1);

    const { tools, events } = await hangUpAndRecords(call, media, sessionId);
    expect(tools).toEqual([expect.objectContaining({ tool_name: 'calcom__book', status: 'error', error_message: expect.stringContaining('disconnected') })]);
    expect(tools[0]!.tool_output).toEqual({ error: tools[0]!.error_message });
    expect(events).toEqual([expect.objectContaining({ provider: 'calcom__book', status: 'error' })]);
  });

  it('a call started while disconnected is not offered the function; a reconnect offers it again', { timeout: 120_000 }, async () => {
    const first = await answeredCall();
    await first.media.say('please book me');
    // The sim model only calls tools it is offered: without one it echoes.
    await first.media.waitUntil(() => first.media.heard.includes('you said: please book me.'), 20_000, 'echo without the tool');
    const off = await hangUpAndRecords(first.call, first.media, first.sessionId);
    expect(off.tools).toEqual([]);

    const again = await h.call('POST', `/connectors/workspace/${h.user.workspaceId}/connect-key/calcom`, { api_key: CALCOM_KEY });
    expect(again.body).toMatchObject({ id: connectionId, is_active: true });
    const second = await answeredCall();
    await second.media.say('please book me');
    await second.media.waitUntil(() => second.media.heard.includes('done.'), 20_000, 'reply after the tool');
    const on = await hangUpAndRecords(second.call, second.media, second.sessionId);
    expect(on.tools).toEqual([expect.objectContaining({ tool_name: 'calcom__book', status: 'success' })]);
    expect(calcom.bookings.map((b) => [b.start, b.attendees[0].phoneNumber])).toEqual([
      [SLOTS[0], CALLER],
      [SLOTS[1], CALLER],
    ]);
  });
});
