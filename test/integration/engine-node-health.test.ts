/**
 * Engine nodes that cannot do their work stop taking or keeping calls.
 *
 * An engine whose conversation records cannot reach Postgres takes no calls: after
 * RECORDS_UNAVAILABLE_AFTER_MS of failed writes `/ready` answers 503 naming the database and its
 * heartbeat marks it unavailable, so `pickNode` places no session there; it is ready again once a
 * write lands. (Outside testing: such a node answered ready, took calls and lost every record.)
 * A node frozen past the node-loss bound (SIGSTOP) ends its calls when it runs again: control
 * planes finalized them and forgot their sessions (outside testing: they went on unreachable).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry, pickNode } from '../../shared/registry/index.js';
import { RECORDS_UNAVAILABLE_AFTER_MS, startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { realClock, type Clock } from '../../shared/clock.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { captureLogger } from '../helpers/infra.js';
import { startSimEngine } from '../helpers/sim-engine.js';

describe('records writer health gates readiness', () => {
  let registry: MemoryRegistry;
  let node: EngineNode;
  let failingForMs = 0;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10 });
    node = await startSimEngine({ config, logger: captureLogger().logger, registry, recordsFailingForMs: () => failingForMs, heartbeatMs: 50 });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  const ready = async () => {
    const res = await fetch(`http://127.0.0.1:${node.port}/ready`);
    return { status: res.status, body: (await res.json()) as { status: string; problem?: string } };
  };
  const placeable = async () => pickNode(await registry.nodes.listNodes())?.nodeId === node.nodeId;

  it('a blip is tolerated; a sustained failure makes the node unready and unplaceable; a landed write restores it', async () => {
    expect((await ready()).status).toBe(200);
    failingForMs = RECORDS_UNAVAILABLE_AFTER_MS - 1;
    expect((await ready()).status).toBe(200);
    failingForMs = RECORDS_UNAVAILABLE_AFTER_MS;
    const down = await ready();
    expect(down).toEqual({ status: 503, body: expect.objectContaining({ status: 'database_unavailable', problem: expect.stringContaining('DATABASE_URL') }) });
    await expect.poll(placeable, { timeout: 5000, interval: 25 }).toBe(false);
    failingForMs = 0;
    expect((await ready()).status).toBe(200);
    await expect.poll(placeable, { timeout: 5000, interval: 25 }).toBe(true);
  });
});

describe('a node frozen past the node-loss bound', () => {
  /** Real timers; the monotonic clock can jump forward as if the process had been stopped. */
  const jumped = { ms: 0 };
  const clock: Clock = { ...realClock, monotonicMs: () => realClock.monotonicMs() + jumped.ms };
  let registry: MemoryRegistry;
  let node: EngineNode;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, nodeLostAfterS: 4 });
    node = await startEngineNode({ config, logger: captureLogger().logger, registry, clock, port: 0, heartbeatMs: 50, providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm(), tts: createSimTts() }) });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  it('ends its calls as node_lost when it runs again (their records were finalized elsewhere)', async () => {
    const cfg = sessionConfig({ welcome_message: 'hi there' });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`, { sendAudio: false });
    try {
      await c.waitForType('pipeline_ready', 5_000);
      // A gap shorter than the bound (3 heartbeats + NODE_LOST_AFTER_S) changes nothing.
      jumped.ms += 1000;
      await new Promise((r) => setTimeout(r, 200));
      expect(c.events.some((e) => e.type === 'call_ended')).toBe(false);
      jumped.ms += 60_000;
      const ended = await c.waitForType('call_ended', 5_000);
      expect(ended.reason).toBe('node_lost');
    } finally {
      c.close();
    }
  });
});

describe('leaving the registry at close', () => {
  it('a heartbeat still in flight at close() does not list the node again after it left', async () => {
    const registry = new MemoryRegistry();
    // Every heartbeat lands 150 ms after it was sent (a slow registry): one is in flight at close.
    const heartbeat = registry.nodes.heartbeat.bind(registry.nodes);
    registry.nodes.heartbeat = (info, ttlMs) => new Promise((r) => setTimeout(r, 150)).then(() => heartbeat(info, ttlMs));
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10 });
    // Beats every 100 ms, each listed for 300 ms after it lands.
    const node = await startSimEngine({ config, logger: captureLogger().logger, registry, heartbeatMs: 100 });
    try {
      await new Promise((r) => setTimeout(r, 130)); // the beat sent at 100 ms is out, not landed
      await node.close();
      await new Promise((r) => setTimeout(r, 160)); // it has landed, and would still be listed
      expect((await registry.nodes.listNodes()).map((n) => n.nodeId)).not.toContain(node.nodeId);
    } finally {
      await node.close();
      await registry.close();
    }
  });
});
