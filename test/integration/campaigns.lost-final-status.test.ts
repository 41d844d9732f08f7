/**
 * Found by the cluster rig (ops.cluster.test.ts): a campaign call's final status callback answered
 * 503 while Redis was down is gone (carriers do not send a status callback again), so the attempt
 * stayed `in_progress` and held its campaign slot until its session's answer window closed (queue
 * allowance + ring timeout + margin: two minutes by default), then ended as `no-answer` whatever
 * the carrier's outcome was. Now the dialer asks the carrier about an open attempt whose call is
 * placed but not connected once it is `carrierCheckAfterMs` old (`GET .../Calls/{sid}.json`, at
 * most once per `carrierRecheckMs` per call) and applies the final status it reports, as its
 * callback would have been.
 *
 * Here the carrier simulator loses the final status callbacks of two callees (busy, no answer). The
 * answer window is left at its defaults, so only the carrier read can settle those attempts within
 * the test's bound. A callee that rings long stays up when asked (`ringing`) and ends by its own
 * callback. (A connected call is judged by its media and session, not asked about.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { until, uploadCsv } from '../helpers/campaigns.js';

let h: TelephonyHarness;
let agentId = '';

beforeAll(async () => {
  h = await startTelephonyHarness({
    app: {
      jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 },
      telephony: { carrierRecheckMs: 1000 },
      // staleAttemptMs stays at its default (2 minutes): the carrier read must not wait for it.
      campaigns: { dialer: { retryBaseMs: 300, maxHoldMs: 500, busyPollMs: 20, sliceMs: 1500, leaseMs: 2000, carrierCheckAfterMs: 1000 } },
    },
  });
  agentId = await h.createAgent({ number: '+14155550901', direction: 'outbound' });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

describe('a final status callback lost on its way', () => {
  it("is read from the carrier: the attempt settles long before the session's answer window closes", { timeout: 60_000 }, async () => {
    const lost = { busy: '+14155560901', noAnswer: '+14155560902' };
    const ringsLong = '+14155560903';
    h.callees.set(lost.busy, { outcome: 'busy', ringMs: 100, loseFinalStatus: true });
    h.callees.set(lost.noAnswer, { outcome: 'no-answer', ringMs: 100, loseFinalStatus: true });
    h.callees.set(ringsLong, { outcome: 'no-answer', ringMs: 6000 });
    const created = await h.call('POST', '/campaigns', { name: 'lost finals', agent_id: agentId, max_retries: 0, max_concurrent_calls: 3, pacing_per_minute: 600 });
    expect(created.status).toBe(201);
    const id = created.body.data.id as string;
    const up = await uploadCsv(h.app.port, h.user.token, id, `phone\n${lost.busy}\n${lost.noAnswer}\n${ringsLong}\n`);
    expect(up.body.data.valid).toBe(3);
    const startedMs = Date.now();
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('running');

    await until(async () => (await h.call('GET', `/campaigns/${id}`)).body.data.status === 'completed', 40_000, 'campaign completed', 250);
    // The answer window alone would take 60 + 30 + 30 s from each placement.
    expect(Date.now() - startedMs).toBeLessThan(40_000);

    const rows = (await h.call('GET', `/campaigns/${id}/calls?per_page=10`)).body.data.calls as Array<Record<string, any>>;
    const byNumber = new Map(rows.map((r) => [r.to_number, r]));
    for (const n of [lost.busy, lost.noAnswer, ringsLong]) expect([n, byNumber.get(n)?.status, byNumber.get(n)?.attempts]).toEqual([n, 'failed', 1]);
    // The carrier's own final status, not a guess.
    expect(byNumber.get(lost.busy)?.error_message).toMatch(/busy/);

    const sims = [...h.sim.calls.values()];
    const simOf = (n: string) => sims.find((c) => c.to === n)!;
    // The lost callbacks were indeed never delivered; the long-ringing call's final one was.
    for (const n of [lost.busy, lost.noAnswer]) expect(simOf(n).callbacks.filter((b) => b.kind === 'status' && b.status === 0)).toHaveLength(1);
    expect(simOf(ringsLong).callbacks.some((b) => b.kind === 'status' && b.params.CallStatus === 'no-answer' && b.status === 200)).toBe(true);
    const reads = h.sim.requests.filter((r) => r.method === 'GET' && /\/Calls\/CA[0-9a-f]{32}\.json$/.test(r.path));
    expect(reads.length).toBeGreaterThanOrEqual(2);
    // Asked while it rang: it stayed up (ringing) until its own callback ended it.
    expect(reads.some((r) => r.path.includes(simOf(ringsLong).sid))).toBe(true);
    expect(h.infra.logLines.filter((l) => l.includes('final status callback never reached us'))).toHaveLength(2);
    // Nothing left holding a seat.
    expect((await h.call('GET', '/telephony/calls')).body.calls).toEqual([]);
  });
});
