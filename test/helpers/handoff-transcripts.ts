/**
 * What the human-segment transcript tests share (issue 21, `transcribe_human_segment`;
 * test/integration/portal.transcribe*.test.ts): an agent that hands calls to the portal, the
 * dual-channel recording a carrier simulator serves (sim-coded speech the agent's `sim` ASR
 * reads), the person accepting the offer over the presence socket, and the segment as the
 * conversations API shows it.
 */
import { expect } from 'vitest';
import { encodeText } from '../../shared/providers/sim/codec.js';
import type { SimLlmScript } from '../../shared/providers/llm/sim.js';
import type { TelephonyHarness } from '../carrier-sim/harness.js';
import type { PresenceClient } from './presence-client.js';
import { encodeWavChannels } from './wav.js';

/** The agents' LLM: asking for a person calls `transfer_to_human` (and keeps the caller on the line). */
export const HANDOFF_SCRIPT: SimLlmScript = { rules: [{ when: 'person', toolCalls: [{ name: 'transfer_to_human', arguments: {} }], afterTool: 'Please stay on the line.' }] };

/** Job settings of the suites: the transcription retried every 2 s, twice. */
export const TRANSCRIBE_JOBS = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'portal.transcribe': { retryLimit: 2, retryDelaySeconds: 2, retryBackoff: false } } };

/** The rate of the simulated recordings (a phone call's narrowband). */
export const RECORDING_RATE_HZ = 8000;

/** A line of the recording: channel 0 the caller's leg, 1 the person's; sim-coded speech at `atS`. */
export interface RecordedLine {
  channel: 0 | 1;
  atS: number;
  text: string;
}

/** A dual-channel recording of `totalS` seconds (channel 1 the caller's leg, channel 2 the person's). */
export function dualRecording(totalS: number, lines: RecordedLine[]): Uint8Array {
  const channels = [new Int16Array(totalS * RECORDING_RATE_HZ), new Int16Array(totalS * RECORDING_RATE_HZ)];
  for (const l of lines) channels[l.channel]!.set(encodeText(l.text, RECORDING_RATE_HZ), Math.round(l.atS * RECORDING_RATE_HZ));
  return encodeWavChannels(channels, RECORDING_RATE_HZ);
}

/** The conversation of the suites: the person greets, the caller answers, the person replies. */
export const HANDOFF_LINES: RecordedLine[] = [
  { channel: 1, atS: 0.2, text: 'hi this is tove' },
  { channel: 0, atS: 2.3, text: 'my bill is wrong' },
  { channel: 1, atS: 4.4, text: 'i will fix it now' },
];

/** `HANDOFF_LINES` as the segment's messages: [role, content, turn, speaker]. */
export const HANDOFF_MESSAGES = [
  ['assistant', 'hi this is tove', 1, 'human_agent'],
  ['user', 'my bill is wrong', 2, 'caller'],
  ['assistant', 'i will fix it now', 2, 'human_agent'],
];

/**
 * An agent of the harness whose published version hands calls to the portal (`allow_human_transfer`,
 * telephony `human_transfer_mode: panel`) with `transcribe_human_segment` as given.
 */
export async function portalAgent(h: TelephonyHarness, o: { number: string; transcribe: boolean; withAccount?: boolean }): Promise<string> {
  const id = await h.createAgent({ number: o.number, withAccount: o.withAccount });
  expect((await h.call('PUT', `/agents/${id}`, { allow_human_transfer: true })).status).toBe(200);
  expect((await h.call('PUT', `/agents/${id}/telephony`, { human_transfer_mode: 'panel', transcribe_human_segment: o.transcribe })).status).toBe(200);
  expect((await h.call('POST', `/agents/${id}/versions/publish`)).status).toBeLessThan(300);
  return id;
}

/** The person accepts the next offer (of `callId`); the human segment's conversation id. */
export async function acceptOffer(presence: PresenceClient, callId: string): Promise<string> {
  const offer = await presence.next('offer');
  expect(offer.call_id).toBe(callId);
  presence.send({ type: 'offer.accept', offer_id: offer.offer_id });
  return (await presence.next('call.connected')).conversation_id as string;
}

/** After a call: the person sets themselves `available` again (wrap-up ends). */
export async function backToAvailable(h: TelephonyHarness, presence: PresenceClient, humanId: string): Promise<void> {
  presence.send({ type: 'status', status: 'available' });
  await expect.poll(async () => (await h.infra.sql`select status from human_agents where id = ${humanId}`)[0]!.status, { timeout: 5000, interval: 50 }).toBe('available');
}

export type SegmentMessage = { role: string; content: string; turn_number: number; metadata: Record<string, unknown>; asr_provider?: string };

/** The human segment as the conversations API shows it. */
export function segmentOf(h: TelephonyHarness) {
  const conversation = async (id: string) => (await h.call('GET', `/conversations/${id}`)).body.data.conversation;
  return {
    conversation,
    messages: async (id: string) => (await h.call('GET', `/conversations/${id}/messages`)).body.data as SegmentMessage[],
    /** Waits for the segment's `transcription_status` to be `status`. */
    async settles(id: string, status: 'completed' | 'failed', timeoutMs = 30_000): Promise<void> {
      await expect.poll(async () => (await conversation(id)).metadata?.transcription_status, { timeout: timeoutMs, interval: 200 }).toBe(status);
    },
    /** The segment's hand-off row (recording named, carrier, status). */
    async handoff(id: string) {
      const [row] = await h.infra.sql<{ id: string; recording_url: string | null; recording_sid: string | null; carrier: string | null; transcription_status: string | null; transcribed_at: Date | null }[]>`
        select id, recording_url, recording_sid, carrier, transcription_status, transcribed_at from human_handoffs where conversation_id = ${id}`;
      return row!;
    },
  };
}
