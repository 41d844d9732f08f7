/**
 * Issue 23, "Postgres restarts are survived by every writer": the control plane reaches Postgres
 * through a TCP proxy; while webhook deliveries are queued on the job queue, the database
 * "restarts" (every connection reset, new ones refused for 3 s, then accepted again). Afterwards
 * the job queue works on by itself: every queued event is delivered, each with the body stored for
 * it (at least once; a repeat carries the same bytes), a new event is delivered too, and the node
 * sweeper's passes go on (its successor chain survived the outage).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_DATABASE_URL, type TestInfra } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const EVENTS = 3;
let proxy: TcpProxy;
let infra: TestInfra;
let app: ControlPlane;
let receiver: WebhookReceiver;
let user: TestUser;

beforeAll(async () => {
  expect(devTlsTrusted()).toBe(true);
  const target = new URL(TEST_DATABASE_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 5432));
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'], dbStatementTimeoutMs: 1500, dbConnectTimeoutMs: 1000 }, { DATABASE_URL: proxy.urlFor(TEST_DATABASE_URL) });
  // A delivery job that was running when the connections were reset cannot record its end and
  // stays active until it expires (production: 60 s); a short expiry brings it back within seconds.
  const jobs = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'webhook.deliver': { expireInSeconds: 5, retryDelaySeconds: 1, retryBackoff: false } } };
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1', jobs, nodeSweepIntervalS: 1 });
  receiver = await startWebhookReceiver();
  user = await createTestUser(app);
  const put = await api(app, 'PUT', '/api/v1/call-center/settings', { token: user.token, body: { webhook_url: receiver.url } });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await infra?.close();
  await receiver?.close();
  await proxy?.close();
});

const testEvent = () => api(app, 'POST', '/api/v1/call-center/webhooks/test', { token: user.token });
const delivered = async (ids: string[]) => (await infra.sql`select count(*)::int as n from webhook_deliveries where id = any(${ids}) and status = 'delivered'`)[0]!.n as number;
const sweeperPasses = async () =>
  (await infra.sql.unsafe(`select count(*)::int as n from "${infra.schema}_boss".job where name = 'ops.node-sweep' and state = 'completed'`))[0]!.n as number;

describe('a Postgres restart under the job queue', () => {
  it('loses and garbles no delivery, and the queue works on afterwards', { timeout: 90_000 }, async () => {
    const ids: string[] = [];
    for (let i = 0; i < EVENTS; i++) {
      const r = await testEvent();
      expect(r.status, JSON.stringify(r.body)).toBe(202);
      ids.push(r.body.data.delivery_id);
    }
    // The restart: every connection reset, new ones refused, for 3 s (usually before the queue got
    // to the events: the count below says how many it had sent already).
    proxy.reset();
    const sentBefore = receiver.requests.length;
    await new Promise((r) => setTimeout(r, 3000));
    proxy.restore();
    const restoredAt = performance.now();

    await expect.poll(() => delivered(ids).catch(() => -1), { timeout: 45_000, interval: 250 }).toBe(EVENTS);
    const rows = await infra.sql<{ event_id: string; body: string }[]>`select event_id, body from webhook_deliveries where id = any(${ids})`;
    for (const row of rows) {
      const sent = receiver.requests.filter((q) => q.headers['webhook-id'] === row.event_id);
      expect(sent.length).toBeGreaterThanOrEqual(1);
      for (const q of sent) expect(q.raw.toString('utf8')).toBe(row.body);
    }
    // New work after the restart.
    const after = await testEvent();
    expect(after.status, JSON.stringify(after.body)).toBe(202);
    await expect.poll(() => delivered([after.body.data.delivery_id]), { timeout: 30_000, interval: 250 }).toBe(1);
    // The recurring node sweep kept its chain (a pass completed after the restart).
    const passes = await sweeperPasses();
    await expect.poll(sweeperPasses, { timeout: 20_000, interval: 250 }).toBeGreaterThan(passes);
    console.log(`${sentBefore} of ${EVENTS} sent before the restart; all delivered ${Math.round(performance.now() - restoredAt)} ms after Postgres came back; attempts sent: ${receiver.requests.length} for ${EVENTS + 1} events`);
  });
});
