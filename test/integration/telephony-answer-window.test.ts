/**
 * An outbound call's answer window (the time its voice session waits for the carrier's stream)
 * counts from the carrier's `ringing` as well as from the placement: a call that sat in the
 * carrier's queue past the window before it rang is still answered by the agent, and a call that
 * rings unanswered still ends. The windows are shortened here (queue allowance, ring timeout and
 * margin 1 s each, and 1 s for a session's socket) so a call answered at 3.5 s crosses them.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';

let h: TelephonyHarness;
let agentId = '';

beforeAll(async () => {
  // A browser's 30 s connect window would hide the answer window: both are shortened.
  h = await startTelephonyHarness({ app: { telephony: { ringTimeoutS: 1, answerMarginMs: 1000, carrierQueueAllowanceMs: 1000 }, voiceConnectWindowMs: 1000 } });
  agentId = await h.createAgent({ number: '+14155550801' });
}, 90_000);

afterAll(async () => {
  await h?.close();
});

it('a call queued at the carrier past its first answer window is answered by the agent once it rings', { timeout: 30_000 }, async () => {
  const to = '+14155550802';
  // Placement window 3 s (queue allowance 1 s + ring 1 s + margin 1 s); rings at 2.5 s, answered at 3.5 s.
  h.callees.set(to, { queueMs: 2500, ringMs: 1000 });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to });
  expect(res.status).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  const media = await sim.mediaReady;
  await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'greeting');
  expect((await h.call('GET', `/telephony/calls/${res.body.call_id}`)).body.status).toBe('in_progress');
  media.hangup();
  expect(await sim.ended).toBe('completed');
});

it('a call that rings and is never answered still ends within its window from the ringing', { timeout: 30_000 }, async () => {
  const to = '+14155550803';
  // Rings far longer than the window; the carrier never reports a final status in time.
  h.callees.set(to, { queueMs: 1500, ringMs: 60_000 });
  const res = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to });
  expect(res.status).toBe(200);
  const sim = await h.sim.waitForCall((c) => c.sid === res.body.provider_call_sid);
  const deadline = Date.now() + 15_000;
  let status = 0;
  // The window from the ringing (1.5 s + 1 s + 1 s) passes; a read then drops the call as no-answer
  // (the carrier's own ring timeout is not simulated: it would end the call first).
  while (Date.now() < deadline) {
    status = (await h.call('GET', `/telephony/calls/${res.body.call_id}`)).status;
    if (status === 404) break;
    await new Promise((r) => setTimeout(r, 200));
  }
  expect(status).toBe(404);
  expect(await sim.ended).toBe('completed');
  expect(sim.answeredAtMs).toBeFalsy();
});
