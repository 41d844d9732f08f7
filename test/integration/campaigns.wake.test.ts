/**
 * An upload to a RUNNING campaign wakes its dialer the way start and resume do. With the dialer's
 * default holds (maxHoldMs 60 s, unlike campaigns.dialer.test.ts): a campaign whose only contact
 * is in a call has its next slice planned a minute ahead, and the job queue keeps one queued job
 * per campaign, so new contacts waited ~60 s although pacing and capacity were free.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { until, uploadCsv } from '../helpers/campaigns.js';

let h: TelephonyHarness;
let agentId = '';

beforeAll(async () => {
  // Default dialer options: the holds under test are the production ones.
  h = await startTelephonyHarness({ app: { jobs: { pollingIntervalSeconds: 0.5 } } });
  agentId = await h.createAgent({ number: '+14155550961', direction: 'outbound' });
}, 60_000);

afterAll(async () => {
  await h?.close();
});

const contacts = async (id: string) => (await h.call('GET', `/campaigns/${id}/calls?per_page=200`)).body.data.calls as Array<Record<string, any>>;
const simCallsTo = (n: string) => [...h.sim.calls.values()].filter((c) => c.to === n);

describe('an upload to a running campaign', () => {
  it('is dialed at once, not when the idle dial loop planned its next slice (a minute ahead)', { timeout: 60_000 }, async () => {
    const [first, second] = ['+14155559301', '+14155559302'];
    // The first call rings on while the second is uploaded: the loop has nothing else to dial.
    h.callees.set(first, { outcome: 'no-answer', ringMs: 40_000 });
    h.callees.set(second, { outcome: 'no-answer', ringMs: 40_000 });
    const id = (await h.call('POST', '/campaigns', { name: 'wake', agent_id: agentId, pacing_per_minute: 600, max_concurrent_calls: 5, max_retries: 0 })).body.data.id as string;
    expect((await uploadCsv(h.app.port, h.user.token, id, `phone\n${first}\n`)).body.data.valid).toBe(1);
    expect((await h.call('POST', `/campaigns/${id}/start`)).body.data.status).toBe('running');
    await until(() => simCallsTo(first).length === 1, 10_000, 'first dial');
    // The slice found nothing left to claim, released its lease and queued its successor ahead.
    const leaseFree = async () => (await h.infra.sql`select dialer_owner from campaigns where id = ${id}`)[0]!.dialer_owner === null;
    const delayedSuccessor = async () =>
      ((
        await h.infra.sql.unsafe(
          `select count(*)::int as n from "${h.app.jobs.schema}".job where name = 'campaign.dial' and singleton_key = $1 and state = 'created' and start_after > now() + interval '20 seconds'`,
          [id],
        )
      )[0]!.n as number) === 1;
    await until(async () => (await leaseFree()) && (await delayedSuccessor()), 10_000, 'idle dial loop released the campaign, its successor a minute ahead');

    const uploadedAt = Date.now();
    expect((await uploadCsv(h.app.port, h.user.token, id, `phone\n${second}\n`)).body.data.valid).toBe(1);
    await until(() => simCallsTo(second).length === 1, 10_000, 'second contact dialed soon after its upload');
    expect(Date.now() - uploadedAt).toBeLessThan(10_000);
    const row = (await contacts(id)).find((c) => c.to_number === second)!;
    expect(row).toMatchObject({ attempts: 1 });
    expect((await h.call('POST', `/campaigns/${id}/cancel`)).body.data.status).toBe('cancelled');
  });
});
