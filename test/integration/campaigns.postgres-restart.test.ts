/**
 * Issue 23, "make every other writer (jobs, campaigns, webhooks) survive a Postgres restart": a
 * campaign dials through the carrier simulator while the control plane reaches Postgres through
 * a TCP proxy; mid-campaign the database "restarts" (every connection reset, new ones refused for
 * 3 s). Afterwards the dialer goes on by itself and the campaign completes: every contact ended
 * with its full count of attempts, no contact dialed more often than its attempts, the live-call
 * cap never exceeded.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { expectEachAttemptDialedAtMostOnce, until, uploadCsv } from '../helpers/campaigns.js';
import { TEST_DATABASE_URL } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';

/** Short expiry and lease so work caught by the reset comes back within seconds (production: 60 s / 30 s). */
const JOBS = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'campaign.dial': { expireInSeconds: 3, retryDelaySeconds: 1 } } };
const DIALER = { retryBaseMs: 300, maxHoldMs: 500, busyPollMs: 20, sliceMs: 1500, leaseMs: 2000, staleAttemptMs: 3000 };
const CONTACTS = 40;
const MAX_CONCURRENT = 4;

let proxy: TcpProxy;
let h: TelephonyHarness;

beforeAll(async () => {
  const target = new URL(TEST_DATABASE_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
  h = await startTelephonyHarness({ env: { DATABASE_URL: proxy.urlFor(TEST_DATABASE_URL) }, app: { jobs: JOBS, campaigns: { dialer: DIALER } } });
}, 60_000);

afterAll(async () => {
  await h?.close();
  await proxy?.close();
});

describe('a Postgres restart mid-campaign', () => {
  it('the dialer goes on afterwards: every contact completes its attempts, none dialed more often', { timeout: 150_000 }, async () => {
    const agentId = await h.createAgent({ number: '+14155550702', direction: 'outbound' });
    const numbers = Array.from({ length: CONTACTS }, (_, i) => `+1415555${String(2000 + i).padStart(4, '0')}`);
    for (const [i, n] of numbers.entries()) h.callees.set(n, { outcome: i % 2 ? 'busy' : 'no-answer', ringMs: 150 });
    const res = await h.call('POST', '/campaigns', { name: 'pg-restart', agent_id: agentId, pacing_per_minute: 600, max_concurrent_calls: MAX_CONCURRENT, max_retries: 1 });
    expect(res.body.data?.id, JSON.stringify(res.body)).toBeTruthy();
    const id = res.body.data.id as string;
    expect((await uploadCsv(h.app.port, h.user.token, id, `phone\n${numbers.join('\n')}\n`)).status).toBe(200);
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('running');

    const mine = new Set(numbers);
    const dials = () => [...h.sim.calls.values()].filter((s) => mine.has(s.to));
    let maxLive = 0;
    const sampler = setInterval(() => {
      maxLive = Math.max(maxLive, dials().filter((s) => !s.isFinal).length);
    }, 20);
    try {
      await until(() => dials().length >= 10, 30_000, 'first dials');
      proxy.reset();
      const atReset = dials().length;
      await new Promise((r) => setTimeout(r, 3000));
      proxy.restore();

      await until(async () => (await h.call('GET', `/campaigns/${id}`).catch(() => undefined))?.body?.data?.status === 'completed', 120_000, 'campaign completed');
      expect(dials().length).toBeGreaterThan(atReset);
    } finally {
      clearInterval(sampler);
    }
    const rows = (await h.call('GET', `/campaigns/${id}/calls?per_page=200`)).body.data.calls as Array<Record<string, any>>;
    expect(rows).toHaveLength(CONTACTS);
    expectEachAttemptDialedAtMostOnce(rows, dials().map((s) => s.to), MAX_CONCURRENT);
    expect(maxLive).toBeLessThanOrEqual(MAX_CONCURRENT);
  });
});
