/**
 * Issue 23 with real engine processes (`media-engine/main.ts`, spawned) around the full control
 * plane on the machine's Postgres and Redis:
 * - SIGTERM drains: `/ready` fails, `/live` stays up, new sessions go to the other node, the live
 *   call goes on (a text turn is answered) until the caller hangs up, then the process exits 0;
 * - the drain deadline (DRAIN_TIMEOUT_S) ends a remaining call with a goodbye and `server_shutdown`;
 * - SIGKILL: the node's call is finalized `failed` / `node_lost` by the node sweeper (turns kept)
 *   and the call on the other node is unaffected.
 * Browser calls here send no audio (text turns), so the suite is not a real-time one; the carrier
 * side of node loss (hangup through the carrier API, seat, call.completed) is
 * `telephony-node-loss.test.ts`.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTelephonyHarness, type TelephonyHarness } from '../carrier-sim/harness.js';
import { buildChild } from '../helpers/child-build.js';
import { until } from '../helpers/campaigns.js';
import { probe, startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import { api } from '../helpers/accounts.js';
import { TEST_REDIS_URL } from '../helpers/infra.js';
import type { VoiceClient } from '../helpers/voice-client.js';
import { establishedCall } from '../helpers/established-call.js';

let h: TelephonyHarness;
let dir = '';
let agentId = '';
const children: EngineChild[] = [];
const clients: VoiceClient[] = [];

beforeAll(async () => {
  h = await startTelephonyHarness();
  // Only the spawned nodes take sessions here.
  await h.engine.close();
  dir = buildChild([]);
  agentId = await h.createAgent({ welcome: '' });
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.close();
  for (const c of children) if (c.proc.exitCode === null && c.proc.signalCode === null) c.proc.kill('SIGKILL');
  await h?.close();
  if (dir) fs.rmSync(dir, { recursive: true, force: true });
});

async function engine(env: Record<string, string> = {}): Promise<EngineChild> {
  const c = await startEngineChild({ dir, schema: h.infra.schema, registryPrefix: h.infra.registryPrefix, redisUrl: TEST_REDIS_URL, env });
  children.push(c);
  return c;
}

const portOf = (wsUrl: string) => Number(new URL(wsUrl).port);

/** Starts sessions until one is placed on `node` (placement is least-loaded, not chosen by the caller) and is up. */
async function callOn(node: EngineChild, tries = 8): Promise<{ sessionId: string; client: VoiceClient }> {
  const call = await establishedCall(h.app.port, agentId, { tries, accept: (port) => port === node.port });
  clients.push(call.client);
  return call;
}

/** Injects a caller text and waits for the agent's answered turn. */
async function textTurn(sessionId: string, client: VoiceClient): Promise<void> {
  const from = client.events.length;
  const r = await api(h.app, 'POST', `/api/v1/voice/sessions/${sessionId}/text`, { body: { text: 'Are you still there?' } });
  expect(r.status, `${JSON.stringify(r.body)} (socket close code ${client.closeCode}; events ${client.types().slice(-4).join(',')})`).toBe(200);
  await client.waitFor((e) => e.type === 'turn_complete', 15_000, from);
}

async function conversation(sessionId: string) {
  const [row] = await h.infra.sql<Array<{ id: string; status: string; metadata: Record<string, unknown>; engine_node_id: string | null }>>`
    select id, status, metadata, engine_node_id from conversations where session_id = ${sessionId}`;
  return row;
}

describe('engine node lifecycle', () => {
  let survivor: EngineChild;
  let survivorCall: { sessionId: string; client: VoiceClient };

  it('SIGTERM drains: no new sessions, the live call goes on until it ends, then a clean exit', { timeout: 90_000 }, async () => {
    const [a, b] = await Promise.all([engine(), engine()]);
    survivor = b;
    const call = await callOn(a);
    survivorCall = await callOn(b);
    await until(async () => (await conversation(call.sessionId))?.engine_node_id === a.nodeId, 10_000, 'conversation row with its node');

    a.proc.kill('SIGTERM');
    await until(async () => (await h.infra.registry.nodes.listNodes()).some((n) => n.nodeId === a.nodeId && n.draining), 10_000, 'node marked draining');
    expect(await probe(a.port, '/ready')).toBe(503);
    expect(await probe(a.port, '/live')).toBe(200);
    expect(await probe(b.port, '/ready')).toBe(200);

    // New sessions go elsewhere.
    for (let i = 0; i < 4; i++) {
      const r = await api(h.app, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId } });
      expect(portOf(r.body.ws_url)).toBe(b.port);
    }
    // The draining node's call still works (its text turn is routed there and answered).
    await textTurn(call.sessionId, call.client);
    expect(a.proc.exitCode).toBeNull();

    const hungUpAt = performance.now();
    call.client.close();
    const exit = await a.exited;
    expect(exit.code).toBe(0);
    // Drained once idle for the settle time (2 s), then the shutdown itself.
    expect(exit.atMs - hungUpAt).toBeLessThan(15_000);
    console.log(`drained node exited ${Math.round(exit.atMs - hungUpAt)} ms after its last call ended`);
    expect(a.logs.some((l) => l.msg === 'drained' && l.how === 'idle')).toBe(true);
    await until(async () => (await conversation(call.sessionId))?.status !== 'active', 10_000, 'drained call recorded');
    expect((await conversation(call.sessionId))!.metadata.end_reason).not.toBe('server_shutdown');
    // The other node's call did not notice.
    await textTurn(survivorCall.sessionId, survivorCall.client);
  });

  it('at the drain deadline the remaining call hears a goodbye and ends with server_shutdown', { timeout: 60_000 }, async () => {
    const c = await engine({ DRAIN_TIMEOUT_S: '1' });
    const call = await callOn(c);
    await until(async () => (await conversation(call.sessionId)) !== undefined, 10_000, 'conversation row');
    // The first turn's reply has played out: any speech after SIGTERM is the goodbye.
    await call.client.waitForType('turn_complete', 20_000);
    const from = call.client.events.length;
    const termAt = performance.now();
    c.proc.kill('SIGTERM');
    const ended = await call.client.waitFor((e) => e.type === 'call_ended', 20_000, from);
    expect(ended.reason).toBe('server_shutdown');
    // The goodbye was spoken before the end.
    expect(call.client.events.slice(from).some((e) => e.type === 'tts_audio_start')).toBe(true);
    const exit = await c.exited;
    expect(exit.code).toBe(0);
    console.log(`DRAIN_TIMEOUT_S=1: call_ended ${Math.round(ended.at - termAt)} ms, exit ${Math.round(exit.atMs - termAt)} ms after SIGTERM`);
    expect(c.logs.some((l) => l.msg === 'drained' && l.how === 'deadline')).toBe(true);
    await until(async () => (await conversation(call.sessionId))?.status !== 'active', 10_000, 'call recorded');
    expect((await conversation(call.sessionId))!.metadata.end_reason).toBe('server_shutdown');
  });

  it('SIGKILL: the node is lost, its call finalized with node_lost, the other node untouched', { timeout: 90_000 }, async () => {
    const d = await engine();
    const call = await callOn(d);
    await textTurn(call.sessionId, call.client);
    const conv = await (async () => {
      await until(async () => (await conversation(call.sessionId)) !== undefined, 10_000, 'conversation row');
      return (await conversation(call.sessionId))!;
    })();
    await until(async () => (await h.infra.sql`select id from messages where conversation_id = ${conv.id} and turn_number >= 1`).length >= 2, 10_000, 'the turn written');

    const killedAt = performance.now();
    d.proc.kill('SIGKILL');
    await d.exited;
    await until(async () => (await conversation(call.sessionId))?.status === 'failed', 45_000, 'node_lost finalization');
    const lostAfterMs = performance.now() - killedAt;
    const after = (await conversation(call.sessionId))!;
    expect(after.metadata.end_reason).toBe('node_lost');
    expect((await h.infra.sql`select id from messages where conversation_id = ${conv.id} and turn_number >= 1`).length).toBeGreaterThanOrEqual(2);
    // Heartbeat TTL (6 s) + NODE_LOST_AFTER_S (4 s) + the sweep period: generous on a loaded machine.
    expect(lostAfterMs).toBeLessThan(40_000);
    console.log(`node_lost finalization ${Math.round(lostAfterMs)} ms after SIGKILL`);

    expect((await conversation(survivorCall.sessionId))!.status).toBe('active');
    await textTurn(survivorCall.sessionId, survivorCall.client);
    expect(survivor.proc.exitCode).toBeNull();
  });
});
