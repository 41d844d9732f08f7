/**
 * Issue 14, "Done means": a control plane killed mid-delivery and restarted delivers every event
 * at least once and none of them with a different body.
 *
 * Control plane A runs in a child process; the receiver never answers A's requests, and A is
 * SIGKILLed while every delivery is in flight. Control plane B (same database, in this process)
 * starts afterwards: pg-boss's supervisor fails A's expired jobs and B re-sends them.
 */
import type { ChildProcess } from 'node:child_process';
import fs from 'node:fs';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser } from '../helpers/accounts.js';
import { LOST_ATTEMPT, MAX_IN_FLIGHT_PER_WORKSPACE } from '../../control-plane/webhooks/deliver.js';
import { buildChild } from '../helpers/child-build.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { startReplica } from '../helpers/control-plane-replica.js';
import { devTlsTrusted } from '../helpers/tls.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';

/** Short expiry so a dead process's jobs come back within seconds (production: 60 s). */
const JOBS = { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1, queues: { 'webhook.deliver': { expireInSeconds: 3, retryDelaySeconds: 1, retryBackoff: false } } };
const EVENTS = 3;

let infra: TestInfra;
let receiver: WebhookReceiver;
let childDir: string;
let child: ChildProcess | undefined;
let b: ControlPlane | undefined;

beforeAll(async () => {
  expect(devTlsTrusted()).toBe(true);
  // The organization key: the child replica's dev mailbox (the test user's code) is read with it.
  infra = await startTestInfra({ outboundAllowCidrs: ['127.0.0.0/8'], orgApiKey: `org_${randomBytes(18).toString('hex')}` });
  receiver = await startWebhookReceiver();
  childDir = buildChild(['test/helpers/control-plane-child.ts']);
});

afterAll(async () => {
  if (child && child.exitCode === null) child.kill('SIGKILL');
  await b?.close();
  await receiver?.close();
  await infra?.close();
  if (childDir) fs.rmSync(childDir, { recursive: true, force: true });
});

describe('control plane killed mid-delivery, then restarted', () => {
  it('every event is delivered at least once, never with a different body', { timeout: 60_000 }, async () => {
    const a = await startReplica(childDir, infra, { CHILD_JOBS: JSON.stringify(JOBS) });
    child = a.proc;
    const user = await createTestUser(a);
    const put = await api(a, 'PUT', '/api/v1/call-center/settings', { token: user.token, body: { webhook_url: receiver.url } });
    expect(put.status, JSON.stringify(put.body)).toBe(200);
    const secret = put.body.data.webhook_secret as string;
    // A's attempts all hang: the receiver holds every answer until A is gone. Waited for by event
    // id, not by count: on a slow host A may send one of them twice (its job expired and retried).
    const release = receiver.hold();
    const ids: string[] = [];
    try {
      for (let i = 0; i < EVENTS; i++) {
        const r = await api(a, 'POST', '/api/v1/call-center/webhooks/test', { token: user.token });
        expect(r.status, JSON.stringify(r.body)).toBe(202);
        ids.push(r.body.data.delivery_id);
      }
      const events = (await infra.sql<{ event_id: string }[]>`select event_id from webhook_deliveries where id = any(${ids})`).map((r) => r.event_id);
      // One workspace has at most MAX_IN_FLIGHT_PER_WORKSPACE attempts out: the third waits.
      const received = () => events.filter((e) => receiver.requests.some((r) => r.headers['webhook-id'] === e)).length;
      await expect.poll(received, { timeout: 20_000, interval: 50 }).toBe(MAX_IN_FLIGHT_PER_WORKSPACE);
      await new Promise((r) => setTimeout(r, 1500)); // several job polls: the third stays held back
      expect(received()).toBe(MAX_IN_FLIGHT_PER_WORKSPACE);
      const inFlight = await infra.sql`select status from webhook_deliveries where id = any(${ids}) order by status`;
      expect(inFlight.map((r) => r.status)).toEqual(['in_flight', 'in_flight', 'pending']);

      const exited = new Promise((resolve) => a.proc.once('exit', resolve));
      a.proc.kill('SIGKILL');
      await exited;
    } finally {
      release(); // answers A's dead sockets; B's attempts are answered at once
    }

    b = await startControlPlane({ ...infra }, { port: 0, host: '127.0.0.1', jobs: JOBS });
    await expect
      .poll(async () => (await infra.sql`select count(*)::int as n from webhook_deliveries where id = any(${ids}) and status = 'delivered'`)[0].n, { timeout: 30_000, interval: 200 })
      .toBe(EVENTS);

    const byEvent = new Map<string, Buffer[]>();
    for (const r of receiver.requests) byEvent.set(r.headers['webhook-id'], [...(byEvent.get(r.headers['webhook-id']) ?? []), r.raw]);
    const rows = await infra.sql<{ event_id: string; body: string }[]>`select event_id, body from webhook_deliveries where id = any(${ids})`;
    const twice = rows.filter((row) => (byEvent.get(row.event_id) ?? []).length >= 2);
    expect(twice).toHaveLength(MAX_IN_FLIGHT_PER_WORKSPACE); // the ones A never finished, then B's
    for (const row of rows) {
      const sent = byEvent.get(row.event_id) ?? [];
      expect(sent.length).toBeGreaterThanOrEqual(1);
      for (const raw of sent) expect(raw.toString('utf8')).toBe(row.body);
    }
    for (const r of receiver.requests) expect(verifySignature(secret, r)).toBe(true);
    // Every counted attempt has its line: A's lost ones say so; list rows carry every field.
    for (const id of ids) {
      const one = await api(b, 'GET', `/api/v1/call-center/webhooks/deliveries/${id}?workspace_id=${user.workspaceId}`, { token: user.token });
      const d = one.body.data;
      expect(d.attempt_log.map((a: { n: number }) => a.n)).toEqual(Array.from({ length: d.attempts }, (_, i) => i + 1));
      if (d.attempts > 1) expect(d.attempt_log[0]).toMatchObject({ error: LOST_ATTEMPT });
    }
    const list = await api(b, 'GET', `/api/v1/call-center/webhooks/deliveries?workspace_id=${user.workspaceId}`, { token: user.token });
    for (const row of list.body.data) expect(row).toMatchObject({ call_id: null, next_attempt_at: null, last_error: null, last_status_code: 200 });
  });
});
