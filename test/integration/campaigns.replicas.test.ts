/**
 * Issue 15, "Done means": two control-plane replicas on one Postgres + Redis run one campaign;
 * every contact is dialed once per attempt, none twice; killing one replica mid-campaign (SIGKILL
 * while it holds the campaign's dial lease) loses nothing.
 *
 * The dialing replicas B and C are child processes (test/helpers/control-plane-child.ts); the
 * harness's own control plane A serves the API and receives every carrier callback (the role of
 * PUBLIC_BASE_URL behind a load balancer) but dials nothing (`concurrency: 0`).
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { buildChild } from '../helpers/child-build.js';
import { expectEachAttemptDialedAtMostOnce, until, uploadCsv } from '../helpers/campaigns.js';
import { startReplica } from '../helpers/control-plane-replica.js';

/** Short expiry and lease so a dead replica's campaign comes back within seconds (production: 60 s / 30 s). */
const JOBS = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'campaign.dial': { expireInSeconds: 3, retryDelaySeconds: 1 } } };
const DIALER = { retryBaseMs: 300, maxHoldMs: 500, busyPollMs: 20, sliceMs: 1500, leaseMs: 2000, staleAttemptMs: 3000 };

let h: TelephonyHarness;
let childDir = '';
const children: ChildProcess[] = [];

beforeAll(async () => {
  h = await startTelephonyHarness({ app: { jobs: JOBS, campaigns: { dialer: { ...DIALER, concurrency: 0 } } } });
  childDir = buildChild(['test/helpers/control-plane-child.ts']);
}, 60_000);

afterAll(async () => {
  for (const c of children) if (c.exitCode === null) c.kill('SIGKILL');
  await h?.close();
  if (childDir) fs.rmSync(childDir, { recursive: true, force: true });
});

function startDialer(): Promise<{ proc: ChildProcess; owner: string }> {
  const env = {
    CHILD_TWILIO_API_BASE_URL: h.sim.url,
    CHILD_JOBS: JSON.stringify(JOBS),
    CHILD_CAMPAIGNS: JSON.stringify({ dialer: DIALER, callbackBaseUrl: `http://127.0.0.1:${h.app.port}` }),
  };
  return startReplica(childDir, h.infra, env, (p) => children.push(p)).then((r) => ({ proc: r.proc, owner: r.ready.dialer_owner as string }));
}

describe('two replicas, one campaign', () => {
  it('dials every contact once per attempt and loses nothing when the dialing replica is killed', { timeout: 120_000 }, async () => {
    const [b, c] = await Promise.all([startDialer(), startDialer()]);
    const agentId = await h.createAgent({ number: '+14155550701', direction: 'outbound' });
    const numbers = Array.from({ length: 60 }, (_, i) => `+1415554${String(1000 + i).padStart(4, '0')}`);
    for (const [i, n] of numbers.entries()) h.callees.set(n, { outcome: i % 2 ? 'busy' : 'no-answer', ringMs: 150 });
    const res = await h.call('POST', '/campaigns', { name: 'replicas', agent_id: agentId, pacing_per_minute: 600, max_concurrent_calls: 4, max_retries: 1 });
    const id = res.body.data.id as string;
    await uploadCsv(h.app.port, h.user.token, id, `phone\n${numbers.join('\n')}\n`);
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('running');

    // Kill whichever replica is dialing (holds the lease) after some dials; which one pg-boss hands
    // the campaign to is up to its polling, so the test does not insist on one.
    const mine = new Set(numbers);
    const dials = () => [...h.sim.calls.values()].filter((s) => mine.has(s.to));
    await until(() => dials().length >= 15, 30_000, 'first dials');
    const owner = async () => (await h.infra.sql<{ o: string | null }[]>`select dialer_owner as o from campaigns where id = ${id}`)[0].o;
    let holder = '';
    await until(async () => { holder = (await owner()) ?? ''; return holder === b.owner || holder === c.owner; }, 30_000, 'a replica holds the lease');
    const [dead, survivor] = holder === b.owner ? [b, c] : [c, b];
    dead.proc.kill('SIGKILL');
    const atKill = dials().length;

    await until(async () => (await h.call('GET', `/campaigns/${id}`)).body.data.status === 'completed', 90_000, 'campaign completed by the survivor');
    expect(dials().length).toBeGreaterThan(atKill);
    // The lease goes at the end of the dialer's slice, which may come just after the completion.
    await until(async () => (await owner()) === null, 10_000, 'lease released');
    const rows = (await h.call('GET', `/campaigns/${id}/calls?per_page=200`)).body.data.calls as Array<Record<string, any>>;
    expect(rows).toHaveLength(60);
    expectEachAttemptDialedAtMostOnce(rows, dials().map((s) => s.to), 4);
    expect(survivor.proc.exitCode).toBeNull();
  });
});
