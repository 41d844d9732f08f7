/**
 * The registry over a real Redis Cluster (`REDIS_URL=redis+cluster://...`): three masters as
 * redis-server processes on free ports. The registry's contracts (live calls and seats,
 * invalidations) hold on it; nodes, claims, node commands and the transcript bus work across
 * shards; each entity's keys share a slot while entities spread over every master; a voice
 * session is placed, driven and ended through it; and after a master restarts empty the owner
 * writes back what lived there.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { notFound } from '../../shared/errors.js';
import { RedisRegistry } from '../../shared/registry/index.js';
import { createRedisTranscriptBus } from '../../shared/records/bus.js';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { createVoiceDomain, type VoiceDomain } from '../../control-plane/voice/index.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { invalidationContract, liveCallContract } from '../contracts/registry.contract.js';
import { until } from '../helpers/campaigns.js';
import { startTestInfra, uniqueName, type TestInfra } from '../helpers/infra.js';
import { TestRedisCluster, withNode } from '../helpers/redis-cluster.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { simLiveAgent } from '../helpers/live-agent.js';

let cluster: TestRedisCluster;
const registries: RedisRegistry[] = [];

async function connect(prefix: string): Promise<RedisRegistry> {
  const r = await RedisRegistry.connect({ url: cluster.url, prefix, commandTimeoutMs: 1000 });
  registries.push(r);
  return r;
}

beforeAll(async () => {
  cluster = await TestRedisCluster.start(3);
}, 60_000);

afterAll(async () => {
  for (const r of registries) await r.close();
  await cluster?.stop();
});

describe('registry contracts on a Redis Cluster', () => {
  describe('live calls', () => liveCallContract(() => connect(uniqueName('vpc'))));
  describe('invalidations', () =>
    invalidationContract(async () => {
      const prefix = uniqueName('vpc');
      return [await connect(prefix), await connect(prefix)];
    }));
});

describe('registry on a Redis Cluster', () => {
  it('serves nodes, claims, node commands and the transcript bus across shards', async () => {
    const prefix = uniqueName('vpc');
    const [a, b] = [await connect(prefix), await connect(prefix)];
    for (const id of ['node-a', 'node-b', 'node-c']) await a.nodes.heartbeat({ nodeId: id, wsUrl: `ws://${id}`, capacity: 10, load: 0, updatedAtMs: Date.now() }, 60_000);
    expect((await b.nodes.listNodes()).map((n) => n.nodeId).sort()).toEqual(['node-a', 'node-b', 'node-c']);
    await a.nodes.removeNode('node-c');
    expect((await b.nodes.listNodes()).map((n) => n.nodeId).sort()).toEqual(['node-a', 'node-b']);

    await b.sessions.putSession({ sessionId: 's1', agentId: 'ag', nodeId: 'node-a', config: {}, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    expect((await a.sessions.claimSession('s1', 'node-a', 60_000)).status).toBe('claimed');
    expect(await b.sessions.claimSession('s1', 'node-b', 60_000)).toEqual({ status: 'taken', ownerNodeId: 'node-a' });

    // Node commands: the per-node channels and the reply channels hash to different shards.
    const stops = await Promise.all(['node-a', 'node-b'].map((id) => a.commands.serveCommands(id, async (cmd) => ({ by: id, kind: cmd.kind }))));
    expect(await b.commands.sendCommand('node-a', { kind: 'ping' }, 3000)).toEqual({ by: 'node-a', kind: 'ping' });
    expect(await b.commands.sendCommand('node-b', { kind: 'ping' }, 3000)).toEqual({ by: 'node-b', kind: 'ping' });
    // Nobody serves node-z: the exact receiver count (SPUBLISH) fails it at once, not at the timeout.
    const t0 = performance.now();
    await expect(b.commands.sendCommand('node-z', { kind: 'ping' }, 5000)).rejects.toThrow();
    expect(performance.now() - t0).toBeLessThan(2000);
    for (const stop of stops) await stop();

    const pub = await createRedisTranscriptBus({ url: cluster.url, prefix });
    const sub = await createRedisTranscriptBus({ url: cluster.url, prefix });
    try {
      const got: string[] = [];
      const offs = await Promise.all(['conv-1', 'conv-2', 'conv-3'].map((id) => sub.subscribe(id, (ev) => void got.push(ev.conversation_id))));
      for (const id of ['conv-1', 'conv-2', 'conv-3']) pub.publish({ type: 'end', conversation_id: id } as never);
      await until(() => got.length === 3, 5_000, 'transcript events');
      expect(got.sort()).toEqual(['conv-1', 'conv-2', 'conv-3']);
      for (const off of offs) await off();
    } finally {
      await pub.close();
      await sub.close();
    }
  });

  it("keeps each entity's keys on one slot and spreads entities over every master", async () => {
    const prefix = uniqueName('vpc');
    const reg = await connect(prefix);
    const now = Date.now();
    for (let i = 0; i < 30; i++) {
      await reg.sessions.putSession({ sessionId: `s${i}`, agentId: 'ag', nodeId: 'n', config: {}, createdAtMs: now, connectDeadlineMs: now + 60_000 });
      expect((await reg.sessions.claimSession(`s${i}`, 'n', 60_000)).status).toBe('claimed');
      expect(await reg.calls.putCall({ callId: `c${i}`, userId: `u${i % 5}`, poolId: `ws${i % 7}`, providerCallSid: `CA${i}`, data: {}, createdAtMs: now, expiresAtMs: now + 60_000 }, { seatLimit: 10 })).toBe(true);
    }
    const slot = (key: string) => withNode(cluster.nodes[0]!.port, async (c) => Number(await c.sendCommand(['CLUSTER', 'KEYSLOT', key])));
    // A session's config and claim: one slot (the claim script reads and writes both).
    for (let i = 0; i < 30; i++) expect(await slot(`${prefix}:{s:s${i}}:cfg`)).toBe(await slot(`${prefix}:{s:s${i}}:owner`));
    // Every master holds some of this prefix's keys: sessions, calls, pools and sids spread.
    const perMaster = await Promise.all(cluster.nodes.map((n) => withNode(n.port, async (c) => (await c.keys(`${prefix}:*`)).length)));
    expect(perMaster.every((count) => count > 0)).toBe(true);
    // Sessions (config, claim), calls, user and pool indexes, sids, and node n's pending-session index.
    expect(perMaster.reduce((x, y) => x + y, 0)).toBe(30 * 2 + 30 + 5 + 7 + 30 + 1);
    // The pending index is counted across slots (each session's keys checked on its own shard).
    expect(await reg.sessions.pendingOn('n')).toEqual([]);
    await reg.sessions.putSession({ sessionId: 'waiting', agentId: 'ag', nodeId: 'n', config: {}, createdAtMs: now, connectDeadlineMs: now + 60_000 });
    expect(await reg.sessions.pendingOn('n')).toEqual(['waiting']);
    const sessionSlots = new Set(await Promise.all(Array.from({ length: 30 }, (_, i) => slot(`${prefix}:{s:s${i}}:cfg`))));
    expect(sessionSlots.size).toBeGreaterThan(20);
  });

  it('after a master restarts empty, the owner writes back what lived there and commands work again', { timeout: 60_000 }, async () => {
    const prefix = uniqueName('vpc');
    const [owner, other] = [await connect(prefix), await connect(prefix)];
    await owner.nodes.heartbeat({ nodeId: 'node-r', wsUrl: 'ws://r', capacity: 10, load: 1, updatedAtMs: Date.now() }, 600_000);
    const now = Date.now();
    await owner.sessions.putSession({ sessionId: 'live', agentId: 'ag', nodeId: 'node-r', config: {}, createdAtMs: now, connectDeadlineMs: now + 60_000 });
    expect((await owner.sessions.claimSession('live', 'node-r', 600_000)).status).toBe('claimed');
    expect(await owner.calls.putCall({ callId: 'call-r', userId: 'u', poolId: 'ws', providerCallSid: 'CAr', data: { status: 'in_progress' }, createdAtMs: now, expiresAtMs: now + 600_000 }, { seatLimit: 1 })).toBe(true);
    const stop = await owner.commands.serveCommands('node-r', async () => 'pong');

    const victim = await cluster.portOfKey(`${prefix}:{s:live}:owner`);
    // Restarted without persistence: the claim on it is gone until its owner writes it back.
    await cluster.restart(victim);
    // The claim (on the restarted master) is written back by its owner; the other replica sees it.
    await until(async () => (await other.sessions.sessionOwner('live').catch(() => undefined)) === 'node-r', 40_000, 'claim replayed');
    expect((await other.nodes.listNodes()).map((n) => n.nodeId)).toEqual(['node-r']);
    expect((await other.calls.findCallBySid('CAr'))?.callId).toBe('call-r');
    // The seat is held again: the pool (limit 1) refuses a second call.
    expect(await other.calls.putCall({ callId: 'call-2', userId: 'u', poolId: 'ws', data: {}, createdAtMs: now, expiresAtMs: now + 600_000 }, { seatLimit: 1 })).toBe(false);
    await until(async () => (await other.commands.sendCommand('node-r', { kind: 'ping' }, 1000).catch(() => undefined)) === 'pong', 30_000, 'command after restart');
    await stop();
  });
});

describe('a voice session through a Redis Cluster', () => {
  const AGENT = '0190f0a0-0000-7000-8000-0000000000cc';
  let infra: TestInfra;
  let cp: RunningServer;
  let voice: VoiceDomain;
  const nodes: EngineNode[] = [];

  beforeAll(async () => {
    // The control plane's own registry (placement, routing) and transcript bus are on the cluster.
    infra = await startTestInfra({}, { REDIS_URL: cluster.url });
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 50 });
    for (const id of ['node-a', 'node-b']) {
      nodes.push(
        await startEngineNode({
          config,
          logger: infra.logger,
          clock: realClock,
          registry: await connect(infra.registryPrefix),
          nodeId: id,
          port: 0,
          providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({}), tts: createSimTts() }),
        }),
      );
    }
    voice = createVoiceDomain({ registry: infra.registry, clock: realClock, logger: infra.logger, liveConfig: async (id) => (id === AGENT ? simLiveAgent(AGENT) : Promise.reject(notFound('agent'))) });
    cp = await startControlPlaneServer({ port: 0, host: '127.0.0.1', logger: infra.logger, maxBodyBytes: 64 * 1024, services: [...voice.services], routes: [...voice.routes] });
  }, 60_000);

  afterAll(async () => {
    await cp?.close();
    await voice?.close?.();
    for (const n of nodes) await n.close();
    await infra?.close();
  });

  it('is placed on a node, takes text through the control plane and ends', { timeout: 30_000 }, async () => {
    const base = `http://127.0.0.1:${cp.port}/api/v1/voice`;
    const post = (url: string, body: unknown) => fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
    await until(async () => (await infra.registry.nodes.listNodes()).length === 2, 10_000, 'both nodes registered');
    const res = await post(`${base}/sessions/start`, { agent_id: AGENT });
    expect(res.status).toBe(200);
    const s = (await res.json()) as { session_id: string; ws_url: string };
    expect(nodes.map((n) => String(n.port))).toContain(new URL(s.ws_url).port);
    const c = await VoiceClient.connect(s.ws_url);
    await c.waitForType('pipeline_ready');
    const text = await post(`${base}/sessions/${s.session_id}/text`, { text: 'hello cluster', role: 'user' });
    expect(await text.json()).toEqual({ session_id: s.session_id, status: 'injected', text: 'hello cluster' });
    expect((await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1)).assistant_text).toBe('You said: hello cluster.');
    expect(await (await post(`${base}/sessions/${s.session_id}/end`, {})).json()).toEqual({ session_id: s.session_id, status: 'ended' });
    expect((await c.waitForType('call_ended')).reason).toBe('ended_by_api');
    await c.closed();
  });
});

