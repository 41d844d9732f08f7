/**
 * Outbound calls end to end through the carrier simulator: the REST request, the carrier REST call
 * it makes (form fields, callbacks, inline TwiML), the answered call streaming into the engine,
 * status callbacks moving the live record until it is gone; then every answering-machine policy
 * with each verdict (human, machine, unknown, no verdict in time).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isUuid } from '../../shared/ids.js';
import { parseTwiml, streamOf } from '../carrier-sim/index.js';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';

let h: TelephonyHarness;
const AGENT_NUMBER = '+14155550201';
let agentId = '';
let nextNumber = 300;

beforeAll(async () => {
  h = await startTelephonyHarness();
  agentId = await h.createAgent({ number: AGENT_NUMBER, direction: 'outbound', welcome: 'hello {{name|there}}' });
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

function callee(): string {
  return `+1415555${String(nextNumber++).padStart(4, '0')}`;
}

async function dial(agent: string, to: string, extra: Record<string, unknown> = {}) {
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agent, to_number: to, ...extra });
  if (res.status !== 200) throw new Error(`outbound: ${res.status} ${JSON.stringify(res.body)}`);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  return { body: res.body, sim };
}

describe('outbound calls', () => {
  it('dials through the carrier REST API, talks with the callee, and is gone once the carrier reports completed', { timeout: 60_000 }, async () => {
    const to = callee();
    const { body, sim } = await dial(agentId, to, { dynamic_variables: { name: 'Ann' }, session_metadata: { crm_id: 'c-42' }, context: 'A returning customer.' });
    expect(body).toMatchObject({ status: 'initiated', to_number: to, from_number: AGENT_NUMBER, telephony_provider: 'twilio', agent_id: agentId });
    expect(isUuid(body.call_id)).toBe(true);
    expect(body.provider_call_sid).toMatch(/^CA[0-9a-f]{32}$/);
    expect(body.session_id.length).toBeGreaterThanOrEqual(32);

    // What the carrier was asked to do.
    const p = sim.createParams;
    const base = `http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${body.call_id}`;
    expect(p.get('To')).toBe(to);
    expect(p.get('From')).toBe(AGENT_NUMBER);
    expect(p.get('StatusCallback')).toBe(`${base}/status`);
    expect(p.get('StatusCallbackMethod')).toBe('POST');
    expect(p.getAll('StatusCallbackEvent')).toEqual(['initiated', 'ringing', 'answered', 'completed']);
    expect(p.get('MachineDetection')).toBeNull();
    const stream = streamOf(parseTwiml(p.get('Twiml')!).children[0]!)!;
    expect(stream.url).toBe(`ws://127.0.0.1:${h.engine.port}/api/v1/voice/ws/twilio/${body.call_id}`);
    expect(stream.parameters).toEqual({ session_id: body.session_id, agent_id: agentId, call_id: body.call_id });

    const media = await sim.mediaReady;
    await media.waitUntil(() => media.heard.includes('hello ann'), 10_000, 'greeting with the dynamic variable');
    const live = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(live.status).toBe(200);
    expect(live.body).toMatchObject({ call_id: body.call_id, status: 'in_progress', direction: 'outbound', provider_call_sid: body.provider_call_sid, amd_verdict: '' });
    expect(live.body.duration).toBeGreaterThanOrEqual(0);

    await media.say('is this the right number');
    await media.waitUntil(() => media.heard.includes('you said: is this the right number.'), 15_000, 'reply');

    media.hangup();
    expect(await sim.ended).toBe('completed');
    await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
    const statuses = sim.callbacks.filter((c) => c.kind === 'status');
    expect(statuses.map((c) => c.params.CallStatus)).toEqual(['queued', 'ringing', 'in-progress', 'completed']);
    expect(statuses.every((c) => c.status === 200 && JSON.parse(c.body).received === true)).toBe(true);
    const cap = h.captured.get(body.session_id)!;
    expect(cap.callId).toBe(body.call_id);
    expect(cap.turns.map((t) => t.user_text)).toEqual(['is this the right number']);
  });

  it('reports busy and unanswered calls and never streams them', { timeout: 20_000 }, async () => {
    for (const outcome of ['busy', 'no-answer'] as const) {
      const to = callee();
      h.callees.set(to, { outcome });
      const { body, sim } = await dial(agentId, to);
      expect(await sim.ended).toBe(outcome);
      expect(sim.media).toBeUndefined();
      await until(async () => (await h.call('GET', `/telephony/calls/${body.call_id}`)).status === 404, 5000, 'call gone');
      // The session that never connected was purged from the registry.
      await until(async () => !(await h.infra.registry.sessions.getSession(body.session_id)), 5000, 'session purged');
    }
  });
});

interface AmdRow {
  name: string;
  metadata: Record<string, unknown>;
  answeredBy: string | null;
  /** MachineDetection requested at dial time (undefined: none). */
  detection?: string;
  /** What the callee hears first. */
  hears: 'greeting' | 'voicemail';
  /** How the call ends on its own (undefined: it goes on; the test then talks and hangs up). */
  endsWith?: string;
  verdict: string;
  /** AMD verdict delay after answer. Default 700 ms. */
  amdDelayMs?: number;
}

const VOICEMAIL = 'please call us back at your convenience';
const AMD = (policy: string, extra: Record<string, unknown> = {}) => ({ amd_enabled: true, amd_policy: policy, amd_voicemail_message: VOICEMAIL, ...extra });

const AMD_ROWS: AmdRow[] = [
  { name: 'leave_voicemail + machine: voicemail, then hang up', metadata: AMD('leave_voicemail'), answeredBy: 'machine_end_beep', detection: 'DetectMessageEnd', hears: 'voicemail', endsWith: 'voicemail_left', verdict: 'machine' },
  { name: 'leave_voicemail + human: greeting held until the verdict', metadata: AMD('leave_voicemail'), answeredBy: 'human', detection: 'DetectMessageEnd', hears: 'greeting', verdict: 'human' },
  { name: 'leave_voicemail + no verdict (2 s timeout): unknown counts as human', metadata: AMD('leave_voicemail', { amd_verdict_timeout_s: 1 }), answeredBy: null, detection: 'DetectMessageEnd', hears: 'greeting', verdict: '' },
  { name: 'leave_voicemail + unknown treated as machine', metadata: AMD('leave_voicemail', { amd_unknown_treated_as: 'machine' }), answeredBy: 'unknown', detection: 'DetectMessageEnd', hears: 'voicemail', endsWith: 'voicemail_left', verdict: 'unknown' },
  // The verdict comes after the greeting has played, so the greeting can be asserted word for word.
  { name: 'hangup_on_machine + machine: greets at once, then drops the call', metadata: AMD('hangup_on_machine'), answeredBy: 'machine_start', detection: 'Enable', hears: 'greeting', endsWith: 'answering_machine', verdict: 'machine', amdDelayMs: 2500 },
  { name: 'hangup_on_machine + human: the call goes on', metadata: AMD('hangup_on_machine'), answeredBy: 'human', detection: 'Enable', hears: 'greeting', verdict: 'human' },
  { name: 'talk_anyway + machine: the verdict is only recorded', metadata: AMD('talk_anyway'), answeredBy: 'machine_start', detection: 'Enable', hears: 'greeting', verdict: 'machine' },
  { name: 'disabled: no detection requested', metadata: AMD('disabled'), answeredBy: 'machine_start', hears: 'greeting', verdict: '' },
  { name: 'an unknown policy string silently disables detection', metadata: AMD('voicemail_please'), answeredBy: 'machine_start', hears: 'greeting', verdict: '' },
];

describe('answering-machine detection', () => {
  let n = 0;
  it.each(AMD_ROWS)('$name', { timeout: 40_000 }, async (row) => {
    const agent = await h.createAgent({ number: `+1415555${String(400 + n++).padStart(4, '0')}`, direction: 'both', metadata: row.metadata, welcome: 'hello there' });
    const to = callee();
    h.callees.set(to, { answeredBy: row.answeredBy, amdDelayMs: row.amdDelayMs ?? 700 });
    const { body, sim } = await dial(agent, to);
    expect(sim.createParams.get('MachineDetection') ?? undefined).toBe(row.detection);
    if (row.detection) {
      expect(sim.createParams.get('AsyncAmd')).toBe('true');
      expect(sim.createParams.get('AsyncAmdStatusCallback')).toBe(`http://127.0.0.1:${h.app.port}/api/v1/telephony/calls/${body.call_id}/amd`);
    }
    const media = await sim.mediaReady;
    const expected = row.hears === 'greeting' ? 'hello there' : VOICEMAIL;
    await media.waitUntil(() => media.heard.length > 0, 15_000, 'first words');
    expect(media.heard[0]).toBe(expected);
    const firstAudio = media.events.find((e) => e.kind === 'audio_start')!.atMs;
    const amdAt = sim.callbacks.find((c) => c.kind === 'amd')?.atMs;
    if (row.metadata.amd_policy === 'leave_voicemail' && amdAt !== undefined) expect(firstAudio).toBeGreaterThan(amdAt);
    if (row.metadata.amd_policy === 'leave_voicemail' && row.answeredBy === null) expect(firstAudio - media.connectedAtMs).toBeGreaterThan(1900);
    if (row.metadata.amd_policy === 'hangup_on_machine' && amdAt !== undefined) expect(firstAudio).toBeLessThan(amdAt);

    if (row.endsWith) {
      expect(await sim.ended).toBe('completed');
      const cap = h.captured.get(body.session_id)!;
      await until(() => cap.end !== undefined, 5000, 'call end recorded');
      expect(cap.end!.reason).toBe(row.endsWith);
      if (row.hears === 'voicemail') expect(media.heard).toEqual([VOICEMAIL]);
      return;
    }
    if (amdAt === undefined && row.answeredBy !== null && row.detection) await until(() => sim.callbacks.some((c) => c.kind === 'amd'), 5000, 'amd callback');
    await sleep(row.detection ? 300 : 1000);
    const live = await h.call('GET', `/telephony/calls/${body.call_id}`);
    expect(live.status).toBe(200);
    expect(live.body.amd_verdict).toBe(row.verdict);
    await media.say('are you a robot');
    await media.waitUntil(() => media.heard.includes('you said: are you a robot.'), 15_000, 'conversation goes on');
    media.hangup();
    await sim.ended;
  });
});

