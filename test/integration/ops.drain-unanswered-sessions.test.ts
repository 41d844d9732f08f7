/**
 * Issue 23, found by the cluster rig (test/integration/ops.cluster.test.ts): a session placed on
 * an engine node that never connects because its call ended first (an outbound call the callee
 * never answered, or a session ended through the API before its socket came) was dropped from the
 * registry, but the node kept what it had pre-warmed for it until the 30 s connect window closed:
 * counted as the node's load, and a draining node waited for it. In the rig a node whose last
 * call had hung up exited ~30 s after SIGTERM instead of ~2 s (a campaign dials mostly numbers
 * that do not answer).
 *
 * Here a real engine process (no provider factory: it pre-warms like production) gets two
 * outbound calls that end unanswered (busy, no answer) and a browser session ended before it
 * connected; then the node holds nothing pre-warmed, and SIGTERM drains it within seconds.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { api } from '../helpers/accounts.js';
import { until } from '../helpers/campaigns.js';
import { buildChild } from '../helpers/child-build.js';
import { startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import { TEST_REDIS_URL } from '../helpers/infra.js';
import { sample } from '../helpers/metrics-scrape.js';

let h: TelephonyHarness;
let dir = '';
let engine: EngineChild | undefined;

beforeAll(async () => {
  h = await startTelephonyHarness();
  // Only the spawned node takes sessions here.
  await h.engine.close();
  dir = buildChild([]);
  engine = await startEngineChild({ dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: TEST_REDIS_URL });
}, 60_000);

afterAll(async () => {
  if (engine && engine.proc.exitCode === null && engine.proc.signalCode === null) engine.proc.kill('SIGKILL');
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function prewarmed(): Promise<number | undefined> {
  const res = await fetch(`http://127.0.0.1:${engine!.port}/metrics`);
  return sample(await res.text(), 'voiceplane_engine_prewarmed_sessions');
}

describe('sessions that end before their socket connects', () => {
  it('leave nothing pre-warmed on their node, so a drain is not held by them', { timeout: 60_000 }, async () => {
    const agentId = await h.createAgent({ number: '+14155550281', direction: 'outbound' });
    h.callees.set('+14155550282', { outcome: 'busy', ringMs: 300 });
    h.callees.set('+14155550283', { outcome: 'no-answer', ringMs: 300 });
    for (const to of ['+14155550282', '+14155550283']) {
      const r = await h.call('POST', '/telephony/calls/outbound', { agent_id: agentId, to_number: to });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
    }
    const started = await api(h.app, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId } });
    expect(new URL(started.body.ws_url).port).toBe(String(engine!.port));
    // All three were pre-warmed on the node.
    await until(async () => (await prewarmed()) === 3, 10_000, 'three sessions pre-warmed');

    expect((await api(h.app, 'POST', `/api/v1/voice/sessions/${started.body.session_id}/end`)).status).toBe(200);
    const calls = [...h.sim.calls.values()];
    await Promise.all(calls.map((c) => c.ended));
    expect(calls.map((c) => c.status).sort()).toEqual(['busy', 'no-answer']);
    // Their ends reached the node: nothing is held for the connect window.
    await until(async () => (await prewarmed()) === 0, 5000, 'the pre-warmed sessions dropped');

    const termAt = performance.now();
    engine!.proc.kill('SIGTERM');
    const exit = await engine!.exited;
    expect(exit.code).toBe(0);
    // The 2 s settle and the shutdown, not the 30 s connect window.
    expect(exit.atMs - termAt).toBeLessThan(10_000);
  });
});
