/**
 * Issue 21, `transcribe_human_segment`: a sim carrier call handed to a person over the presence
 * socket; the carrier (test/carrier-sim) records the person's leg in two channels and names the
 * recording in the `<Dial action>`; the `portal.transcribe` job downloads it with the account's
 * basic auth (through the outbound client), decodes the WAV, runs the agent's `sim` ASR over each
 * channel (the recording holds sim-coded speech) and writes the human segment's messages, once.
 * `call.completed` waits for it. A recording that stays 404 is retried, then `failed`, with no
 * messages. With the flag off nothing is fetched.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';
import { humanOnPresence, type PresenceClient } from '../helpers/presence-client.js';
import { acceptOffer, backToAvailable, dualRecording, HANDOFF_LINES, HANDOFF_MESSAGES, HANDOFF_SCRIPT, portalAgent, segmentOf, TRANSCRIBE_JOBS } from '../helpers/handoff-transcripts.js';

let h: TelephonyHarness;
let receiver: WebhookReceiver;
let onAgent = '';
let offAgent = '';
let humanId = '';
let nextNumber = 800;
let presence: PresenceClient;

beforeAll(async () => {
  h = await startTelephonyHarness({
    script: HANDOFF_SCRIPT,
    env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' },
    app: { jobs: TRANSCRIBE_JOBS, postCallSweepMs: 500 },
  });
  receiver = await startWebhookReceiver();
  expect((await h.call('PUT', '/call-center/settings', { workspace_id: h.user.workspaceId, webhook_url: receiver.url })).status).toBe(200);
  onAgent = await portalAgent(h, { number: '+14155550801', transcribe: true });
  offAgent = await portalAgent(h, { number: '+14155550802', transcribe: false });
  ({ humanId, presence } = await humanOnPresence(h, { displayName: 'Tove' }));
}, 90_000);

afterAll(async () => {
  presence?.ws.close();
  await h?.close();
  await receiver?.close();
});

/** A live call of `agentId` handed to the person (accepted); resolves once the carrier ended it. */
async function handedOffCall(agentId: string, dialRecording?: Uint8Array, dialRecordingNotReadyGets = 0) {
  const to = `+1415555${String(nextNumber++).padStart(4, '0')}`;
  h.callees.set(to, { dialDurationMs: 1000, dialRecording, dialRecordingNotReadyGets });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to });
  expect(res.status, JSON.stringify(res.body)).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  const media = await sim.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  await media.say('I want to talk to a person');
  const conversationId = await acceptOffer(presence, res.body.call_id);
  expect(await sim.ended).toBe('completed');
  const dial = sim.callbacks.find((c) => c.kind === 'dial_action')!;
  return { callId: res.body.call_id as string, conversationId, recordingSid: dial.params.RecordingSid!, recordingPath: new URL(dial.params.RecordingUrl!).pathname };
}

const conversation = (id: string) => segmentOf(h).conversation(id);
const messages = (id: string) => segmentOf(h).messages(id);
const webhookFor = (callId: string) => receiver.requests.find((x) => x.json?.data?.call_id === callId)?.json;
const recordingGets = (path: string) => h.sim.requests.filter((r) => r.method === 'GET' && r.path === `${path}.wav`);

describe('transcribe_human_segment', () => {
  it('transcribes both channels of the person\'s leg into the human segment once (after the carrier\'s 404s), and call.completed waits for it', { timeout: 60_000 }, async () => {
    const wav = dualRecording(7, HANDOFF_LINES);
    // Not downloadable for the first two attempts (~4 s: longer than the event's 2 s settle).
    const call = await handedOffCall(onAgent, wav, 2);
    await expect.poll(async () => (await conversation(call.conversationId)).metadata?.transcription_status, { timeout: 20_000, interval: 200 }).toBe('completed');
    const msgs = await messages(call.conversationId);
    expect(msgs.map((m) => [m.role, m.content, m.turn_number, m.metadata.speaker])).toEqual(HANDOFF_MESSAGES);
    expect(msgs[0]!.metadata).toMatchObject({ human_agent_id: humanId, channel: 2, source: 'recording', recording_sid: call.recordingSid });
    expect(msgs[1]!.metadata.start_ms).toBeGreaterThan(2000);
    expect(msgs[0]!.asr_provider).toBe('sim');
    // Retried until the carrier had the file, with the account's credentials (the sim answers 401 without them).
    expect(recordingGets(call.recordingPath).map((r) => r.status)).toEqual([404, 404, 200]);
    const [row] = await h.infra.sql<{ transcription_status: string; transcribed_at: Date }[]>`select transcription_status, transcribed_at from human_handoffs where conversation_id = ${call.conversationId}`;
    expect(row!.transcription_status).toBe('completed');

    // The event was held until the transcript existed.
    await expect.poll(() => webhookFor(call.callId), { timeout: 30_000, interval: 200 }).toBeDefined();
    expect(new Date(webhookFor(call.callId).created_at).getTime()).toBeGreaterThanOrEqual(row!.transcribed_at.getTime());
    expect(webhookFor(call.callId).data.segments.map((s: { handler: string }) => s.handler)).toEqual(['ai', 'human']);

    // A duplicate job (at least once delivery) writes nothing twice.
    const [handoff] = await h.infra.sql<{ id: string }[]>`select id from human_handoffs where conversation_id = ${call.conversationId}`;
    const again = await h.app.jobs.enqueue('portal.transcribe', { handoff_id: handoff!.id }, { singletonKey: `again-${handoff!.id}` });
    await expect.poll(async () => (await h.app.jobs.state('portal.transcribe', again!))?.state, { timeout: 10_000, interval: 100 }).toBe('completed');
    expect(await messages(call.conversationId)).toHaveLength(3);
    await backToAvailable(h, presence, humanId);
  });

  it('a recording that stays 404 is retried, then the transcription is failed with no messages', { timeout: 60_000 }, async () => {
    const call = await handedOffCall(onAgent, undefined);
    await expect.poll(async () => (await conversation(call.conversationId)).metadata?.transcription_status, { timeout: 30_000, interval: 200 }).toBe('failed');
    // First attempt plus the two retries of this suite's queue settings.
    expect(recordingGets(call.recordingPath).map((r) => r.status)).toEqual([404, 404, 404]);
    expect((await conversation(call.conversationId)).metadata.transcription_error).toMatch(/404/);
    expect(await messages(call.conversationId)).toEqual([]);
    // Failed is final: the event goes out.
    await expect.poll(() => webhookFor(call.callId), { timeout: 30_000, interval: 200 }).toBeDefined();
    await backToAvailable(h, presence, humanId);
  });

  it('with transcribe_human_segment off nothing is fetched', { timeout: 60_000 }, async () => {
    const wav = dualRecording(3, [{ channel: 1, atS: 0.2, text: 'hello there' }]);
    const call = await handedOffCall(offAgent, wav);
    await expect.poll(() => webhookFor(call.callId), { timeout: 30_000, interval: 200 }).toBeDefined();
    expect(recordingGets(call.recordingPath)).toEqual([]);
    expect((await conversation(call.conversationId)).metadata?.transcription_status).toBeUndefined();
    expect(await messages(call.conversationId)).toEqual([]);
    const [row] = await h.infra.sql`select transcription_status, recording_url from human_handoffs where conversation_id = ${call.conversationId}`;
    expect(row).toMatchObject({ transcription_status: null, recording_url: null });
    await backToAvailable(h, presence, humanId);
  });
});
