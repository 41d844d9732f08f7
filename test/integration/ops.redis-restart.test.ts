/**
 * Issue 23, "restart Redis: no live call dropped": a real Redis of this suite's own (a
 * `redis-server` on a free port, no persistence, so a restart comes back EMPTY; the machine's
 * shared Redis is never touched), the full control plane and a real engine process with three
 * live calls. Redis is stopped and started again: the engine writes its node, claims and sessions
 * again (registry replay on reconnect), every call is still up and answers a text turn routed
 * through the command bus, and the node sweeper never takes the restart for a dead node.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { buildChild } from '../helpers/child-build.js';
import { until } from '../helpers/campaigns.js';
import { startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import type { VoiceClient } from '../helpers/voice-client.js';
import { establishedCall, postText, type EstablishedCall } from '../helpers/established-call.js';
import { TestRedisServer } from '../helpers/redis-server.js';

let redis: TestRedisServer | undefined;
let h: TelephonyHarness;
let dir = '';
let child: EngineChild | undefined;
let agentId = '';
const clients: VoiceClient[] = [];

beforeAll(async () => {
  redis = await TestRedisServer.start();
  h = await startTelephonyHarness({ env: { REDIS_URL: redis.url }, app: { jobs: { pollingIntervalSeconds: 0.5, maintenanceIntervalSeconds: 1 }, nodeSweepIntervalS: 1 } });
  await h.engine.close();
  agentId = await h.createAgent({ welcome: '' });
  dir = buildChild([]);
  child = await startEngineChild({ dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: redis.url });
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  if (child && child.proc.exitCode === null && child.proc.signalCode === null) child.proc.kill('SIGKILL');
  await h?.close();
  await redis?.stop();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

/** 503s answered while the engine's command subscription was still reconnecting (retried, as clients do). */
let retried503 = 0;

/** A caller text and its answered turn; a 503 (Retry-After) is retried like a client would, at most 10 times. */
async function textTurn(sessionId: string, client: VoiceClient): Promise<void> {
  const from = client.events.length;
  const r = await postText(h.app.port, sessionId, 'Still there?');
  retried503 += r.retried;
  expect(r.status, `${JSON.stringify(r.body)} (socket close code ${client.closeCode}; events ${client.types().slice(-4).join(',')})`).toBe(200);
  await client.waitFor((e) => e.type === 'turn_complete', 15_000, from);
}

describe('Redis restart with live calls', () => {
  it('drops no call: the engine writes its state again and every call keeps working', { timeout: 90_000 }, async () => {
    const calls: EstablishedCall[] = [];
    for (let i = 0; i < 3; i++) {
      const call = await establishedCall(h.app.port, agentId);
      clients.push(call.client);
      calls.push(call);
    }

    await redis!.restart();
    const restartedAt = performance.now();
    // Replay on reconnect: the node and every claim are back in the empty Redis.
    await until(async () => (await h.infra.registry.nodes.listNodes().catch(() => [])).some((n) => n.nodeId === child!.nodeId), 15_000, 'node back in the registry');
    // Claims follow the node entry in the same replay, a round trip later.
    const owners = async () => Promise.all(calls.map((c) => h.infra.registry.sessions.sessionOwner(c.sessionId).catch(() => undefined)));
    await until(async () => (await owners()).every((o) => o === child!.nodeId), 15_000, 'claims back in the registry');
    console.log(`engine node back in the registry ${Math.round(performance.now() - restartedAt)} ms after Redis restarted`);

    for (const c of calls) await textTurn(c.sessionId, c.client);
    console.log(`text turns answered 503 (Retry-After) while the engine's command subscription reconnected: ${retried503}`);
    // A pass now sees the node listed: nothing is watched, so nothing can be judged lost later.
    expect((await h.app.nodeSweeper.sweep()).lostNodes).toEqual([]);
    expect(await h.infra.sql`select node_id from engine_node_watch`).toHaveLength(0);
    const rows = await h.infra.sql<Array<{ status: string }>>`select status from conversations where session_id = any(${h.infra.sql.array(calls.map((c) => c.sessionId))})`;
    expect(rows.map((r) => r.status)).toEqual(['active', 'active', 'active']);
    for (const c of calls) {
      expect(c.client.closeCode).toBeUndefined();
      expect(c.client.types()).not.toContain('call_ended');
    }
    expect(child!.proc.exitCode).toBeNull();
  });
});
