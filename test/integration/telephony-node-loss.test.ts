/**
 * Issue 23, node death for a carrier call: an inbound call is answered by a real engine process
 * (`media-engine/main.ts`, spawned), which is then SIGKILLed. The node sweeper (job queue) must:
 * finalize the conversation (`failed`, `node_lost`), hang the call up through the carrier REST
 * API, take it out of the live-call registry (its seat free again), and `call.completed` must be
 * delivered exactly once, with status `abandoned` (spec doc 3: ended without recorded completion).
 * Real time: the carrier simulator streams audio, so this runs in the `realtime` project.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { placeInbound } from '../helpers/carrier-calls.js';
import { buildChild } from '../helpers/child-build.js';
import { until } from '../helpers/campaigns.js';
import { startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import { TEST_REDIS_URL } from '../helpers/infra.js';
import { startWebhookReceiver, verifySignature, type WebhookReceiver } from '../helpers/webhook-receiver.js';

const NUMBER = '+14155550231';
const CALLER = '+14155550239';

let h: TelephonyHarness;
let receiver: WebhookReceiver;
let secret = '';
let dir = '';
let child: EngineChild | undefined;

beforeAll(async () => {
  h = await startTelephonyHarness({
    env: { OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' },
    app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, postCallSweepMs: 500, webhookJitter: () => 0.5, nodeSweepIntervalS: 1 },
  });
  // Only the spawned node answers calls here.
  await h.engine.close();
  receiver = await startWebhookReceiver();
  const put = await h.call('PUT', '/call-center/settings', { workspace_id: h.user.workspaceId, webhook_url: receiver.url });
  expect(put.status, JSON.stringify(put.body)).toBe(200);
  secret = put.body.data.webhook_secret;
  await h.createAgent({ number: NUMBER, direction: 'inbound', welcome: 'hello caller' });
  dir = buildChild([]);
  child = await startEngineChild({ dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: TEST_REDIS_URL });
}, 60_000);

afterAll(async () => {
  if (child && child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  await h?.close();
  await receiver?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

describe('an engine node dies during a carrier call', () => {
  it('finalizes the call with node_lost: carrier hangup, seat freed, call.completed once', { timeout: 90_000 }, async () => {
    const { call, media, callId, sessionId, port } = await placeInbound(h.sim, { webhookUrl: h.inboundUrl(), from: CALLER, to: NUMBER, accountSid: h.accountSid });
    expect(port).toBe(child!.port);
    await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome');
    await until(async () => (await h.infra.sql`select id from conversations where session_id = ${sessionId}`).length === 1, 10_000, 'conversation row');
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(1);

    const killedAt = performance.now();
    child!.proc.kill('SIGKILL');
    await child!.exited;

    const conversation = async () =>
      (await h.infra.sql<Array<{ id: string; status: string; metadata: Record<string, unknown> }>>`select id, status, metadata from conversations where session_id = ${sessionId}`)[0]!;
    await until(async () => (await conversation()).status === 'failed', 45_000, 'node_lost finalization');
    console.log(`carrier call finalized ${Math.round(performance.now() - killedAt)} ms after SIGKILL`);
    const conv = await conversation();
    expect(conv.metadata.end_reason).toBe('node_lost');

    // Hung up through the carrier's REST API (whatever the stream's drop already did there).
    const hangups = h.sim.requests.filter((r) => r.method === 'POST' && r.path.endsWith(`/Calls/${call.sid}.json`) && r.params.get('Status') === 'completed');
    expect(hangups).toHaveLength(1);
    expect(call.isFinal).toBe(true);
    // Out of the live-call registry: the seat is free, the call answers 404.
    expect((await h.call('GET', `/telephony/calls/${callId}`)).status).toBe(404);
    expect((await h.call('GET', '/telephony/calls')).body.count).toBe(0);

    // call.completed, status abandoned, exactly once.
    const events = () => receiver.requests.filter((r) => r.json?.data?.call_id === callId);
    await until(() => events().length > 0, 30_000, 'call.completed');
    const ev = events()[0]!;
    expect(verifySignature(secret, ev)).toBe(true);
    expect(ev.json.type).toBe('call.completed');
    expect(ev.json.data).toMatchObject({ conversation_id: conv.id, status: 'abandoned', analysis_status: 'skipped' });
    // Further sweeps (1 s apart) and the relay must not send it again.
    await until(async () => (await h.app.nodeSweeper.sweep()).lostNodes.length === 0, 5000, 'sweeper idle');
    const deliveries = await h.infra.sql`select id from webhook_deliveries where call_id = ${callId}`;
    expect(deliveries).toHaveLength(1);
    expect(events()).toHaveLength(1);
  });
});
