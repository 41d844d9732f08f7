/**
 * Sessions across processes: two engine nodes and a control plane on one Redis (three registry
 * instances, one prefix), the connect deadline purge, the socket error frames, the socket cap,
 * text/end routed to the owning node, and failures that must stay inside one call.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { loadConfig } from '../../shared/config.js';
import { realClock, SimulatedClock } from '../../shared/clock.js';
import { notFound } from '../../shared/errors.js';
import { ProviderError } from '../../shared/providers/errors.js';
import { MemoryRegistry, RedisRegistry } from '../../shared/registry/index.js';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from '../../control-plane/health/service.js';
import { healthRoutes } from '../../control-plane/health/routes.js';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { createVoiceDomain, type LiveAgentConfig, type VoiceDomain } from '../../control-plane/voice/index.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { MAX_CLIENT_MESSAGE_BYTES } from '../../media-engine/browser-route.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import { captureLogger, startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { sessionConfig } from '../helpers/session-config.js';
import { liveProvider, simLiveAgent } from '../helpers/live-agent.js';

const AGENT = '0190f0a0-0000-7000-8000-0000000000aa';
const AGENT_REAL_VENDOR = '0190f0a0-0000-7000-8000-0000000000bb';


const AGENTS: Record<string, LiveAgentConfig> = {
  [AGENT]: simLiveAgent(AGENT),
  // A real vendor with no key: the socket must refuse with a frame naming the missing key.
  [AGENT_REAL_VENDOR]: simLiveAgent(AGENT_REAL_VENDOR, liveProvider('llm', 'openai', '')),
};

describe('sessions across two engine nodes on one Redis', () => {
  let infra: TestInfra;
  let cp: RunningServer;
  let voice: VoiceDomain;
  const nodes: EngineNode[] = [];
  const registries: RedisRegistry[] = [];
  let base = '';
  let brokenLlm = false;

  beforeAll(async () => {
    infra = await startTestInfra();
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 50 });
    for (const id of ['node-a', 'node-b']) {
      const reg = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix: infra.registryPrefix });
      registries.push(reg);
      nodes.push(
        await startEngineNode({
          config,
          logger: infra.logger,
          clock: realClock,
          registry: reg,
          nodeId: id,
          port: 0,
          providerFactory: (c) => {
            if (c.providers.llm.provider_name !== 'sim') throw new ProviderError({ provider: c.providers.llm.provider_name, code: 'MISSING_API_KEY', message: `missing LLM provider key (${c.providers.llm.provider_name})` });
            return { asr: createSimAsr(), llm: brokenLlm ? throwingLlm() : createSimLlm({}), tts: createSimTts() };
          },
        }),
      );
    }
    voice = createVoiceDomain({ registry: infra.registry, clock: realClock, logger: infra.logger, liveConfig: async (id) => AGENTS[id] ?? Promise.reject(notFound('agent')) });
    cp = await startControlPlaneServer({
      port: 0,
      host: '127.0.0.1',
      logger: infra.logger,
      maxBodyBytes: 64 * 1024,
      services: [{ service: HealthService, impl: createHealthService(infra) }, ...voice.services],
      routes: [...healthRoutes, ...voice.routes],
    });
    base = `http://127.0.0.1:${cp.port}/api/v1/voice`;
  });

  afterAll(async () => {
    await cp?.close();
    await voice?.close?.();
    for (const n of nodes) await n.close();
    for (const r of registries) await r.close();
    await infra?.close();
  });

  async function start(agentId = AGENT) {
    const res = await fetch(`${base}/sessions/start`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ agent_id: agentId }) });
    expect(res.status).toBe(200);
    return (await res.json()) as { session_id: string; ws_url: string };
  }

  it('routes text and end to the owning node, whichever node it is', { timeout: 30_000 }, async () => {
    // Least-loaded placement (counting placements since the last heartbeat) spreads two starts over two nodes.
    const s1 = await start();
    const c1 = await VoiceClient.connect(s1.ws_url);
    await c1.waitForType('pipeline_ready');
    // Wait until the heartbeats show this call on its node and nothing on the other (a call of an
    // earlier test may still be counted until the next heartbeat): then placement is not a tie.
    const owner = nodes.find((n) => String(n.port) === new URL(s1.ws_url).port)!;
    await waitFor(async () => {
      const seen = await infra.registry.nodes.listNodes();
      return seen.length === 2 && seen.every((n) => (n.nodeId === owner.nodeId ? n.load === 1 : n.load === 0));
    }, 20_000);
    const s2 = await start();
    expect(new URL(s2.ws_url).port).not.toBe(new URL(s1.ws_url).port);
    const c2 = await VoiceClient.connect(s2.ws_url);
    await c2.waitForType('pipeline_ready');

    for (const [s, c] of [[s1, c1], [s2, c2]] as const) {
      const res = await post(`${base}/sessions/${s.session_id}/text`, { text: 'hello there', role: 'user' });
      expect(res.status).toBe(200);
      expect(await res.json()).toEqual({ session_id: s.session_id, status: 'injected', text: 'hello there' });
      const tc = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1);
      expect(tc.assistant_text).toBe('You said: hello there.');
    }
    const end = await post(`${base}/sessions/${s2.session_id}/end`, {});
    expect(await end.json()).toEqual({ session_id: s2.session_id, status: 'ended' });
    expect((await c2.waitForType('call_ended')).reason).toBe('ended_by_api');
    await c2.closed();
    c1.close();
    await c1.closed();
  });

  it('text before the socket connects is 409, unknown session 404', async () => {
    const s = await start();
    expect((await post(`${base}/sessions/${s.session_id}/text`, { text: 'hi' })).status).toBe(409);
    expect((await post(`${base}/sessions/nope-${s.session_id}/text`, { text: 'hi' })).status).toBe(404);
    await post(`${base}/sessions/${s.session_id}/end`, {});
  });

  it('an unknown session gets the error frame, then the socket closes', async () => {
    const c = await VoiceClient.connect(`ws://127.0.0.1:${nodes[0].port}/api/v1/voice/ws/does-not-exist`, { sendAudio: false });
    const err = await c.waitForType('error');
    expect(err.message).toBe('session not found, start a session first');
    await c.closed();
  });

  it('a session cannot be claimed twice (one session, one socket)', async () => {
    const s = await start();
    const c1 = await VoiceClient.connect(s.ws_url);
    await c1.waitForType('pipeline_ready');
    const c2 = await VoiceClient.connect(s.ws_url, { sendAudio: false });
    expect(await c2.waitForType('error')).toMatchObject({ fatal: true, code: 'session_in_use', message: 'session already has a socket: one socket per session' });
    await c2.closed();
    expect(c2.closeCode).toBe(1008);
    c1.close();
    await c1.closed();
  });

  it('a message over 64 KiB gets the error frame and close 1009', async () => {
    const s = await start();
    const c = await VoiceClient.connect(s.ws_url, { sendAudio: false });
    await c.waitForType('pipeline_ready');
    c.sendRaw(Buffer.alloc(MAX_CLIENT_MESSAGE_BYTES + 2));
    const err = await c.waitForType('error');
    expect(err).toMatchObject({ fatal: true, message: `message of ${MAX_CLIENT_MESSAGE_BYTES + 2} bytes: the most is ${MAX_CLIENT_MESSAGE_BYTES}` });
    await c.closed();
    expect(c.closeCode).toBe(1009);
  });

  it('missing provider credentials: error frame naming the key, process unaffected', async () => {
    const s = await start(AGENT_REAL_VENDOR);
    const c = await VoiceClient.connect(s.ws_url, { sendAudio: false });
    const err = await c.waitForType('error');
    expect(err.message).toMatch(/missing LLM provider key/);
    await c.closed();
  });

  it('a failing LLM gives llm_error and the call goes on', { timeout: 20_000 }, async () => {
    brokenLlm = true;
    try {
      const s = await start();
      const c = await VoiceClient.connect(s.ws_url);
      await c.waitForType('pipeline_ready');
      c.sendJson({ type: 'text_inject', text: 'first', role: 'user' });
      const e = await c.waitForType('llm_error');
      expect(e).toMatchObject({ turn: 1, text: 'model exploded' });
      await c.waitFor((x) => x.type === 'turn_complete' && x.turn === 1);
      c.sendJson({ type: 'text_inject', text: 'second', role: 'user' });
      await c.waitFor((x) => x.type === 'llm_error' && x.turn === 2);
      c.sendJson({ type: 'garbage' });
      c.sendRaw(Buffer.from([1, 2, 3]));
      c.sendRaw('not json');
      // What POST /voice/sessions/{id}/text refuses with 400, the socket refuses with a non-fatal
      // INVALID_REQUEST (it used to cut the text at 4,000, drop a 20 KB frame and take any role).
      const refused = (message: string) => c.waitFor((x) => x.type === 'error' && x.code === 'INVALID_REQUEST' && x.fatal === false && String(x.message).includes(message));
      c.sendJson({ type: 'text_inject', text: 'x'.repeat(5000), role: 'user' });
      await refused('at most 4000 characters');
      c.sendJson({ type: 'text_inject', text: 'y'.repeat(20_000), role: 'user' });
      await refused('at most 16384 characters');
      c.sendJson({ type: 'text_inject', text: 'hello', role: 'bogus' });
      await refused('role must be user or system');
      c.close();
      await c.closed();
    } finally {
      brokenLlm = false;
    }
  });

});

describe('one engine node alone', () => {
  it('the concurrent socket cap refuses the upgrade with 503', async () => {
    const registry = new MemoryRegistry();
    const node = await startEngineNode({
      config: loadConfig({}, { enginePort: 0, host: '127.0.0.1', maxSockets: 1 }),
      logger: captureLogger().logger,
      clock: realClock,
      registry,
      port: 0,
      providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({}), tts: createSimTts() }),
    });
    try {
      const cfg = sessionConfig();
      await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
      const held = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`);
      await held.waitForType('pipeline_ready');
      const refused = await new Promise<{ status: number; body: string }>((resolve, reject) => {
        const ws = new WebSocket(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/another`);
        ws.on('unexpected-response', (_req, res) => {
          let body = '';
          res.on('data', (c: Buffer) => (body += c));
          res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
        });
        ws.on('open', () => reject(new Error('upgrade was accepted')));
        ws.on('error', () => {});
      });
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: 'SERVICE_UNAVAILABLE' } });
      held.close();
      await held.closed();
    } finally {
      await node.close();
      await registry.close();
    }
  });
});

describe('the 30 s connect deadline', () => {
  it('purges an unclaimed session: a later connect gets the not-found frame', async () => {
    const clock = new SimulatedClock(Date.now());
    const registry = new MemoryRegistry(clock);
    const node = await startEngineNode({
      config: loadConfig({}, { enginePort: 0, host: '127.0.0.1' }),
      logger: captureLogger().logger,
      clock: realClock,
      registry,
      port: 0,
      providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({}), tts: createSimTts() }),
    });
    try {
      const cfg = sessionConfig();
      await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: clock.now(), connectDeadlineMs: clock.now() + 30_000 });
      clock.advance(29_000);
      expect(await registry.sessions.getSession(cfg.session_id)).toBeDefined();
      clock.advance(1_001);
      expect(await registry.sessions.getSession(cfg.session_id)).toBeUndefined();
      const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`, { sendAudio: false });
      expect((await c.waitForType('error')).message).toBe('session not found, start a session first');
      await c.closed();
    } finally {
      await node.close();
    }
  });
});

function throwingLlm(): LlmProvider {
  return {
    label: 'sim',
    model: 'broken',
    capabilities: { tools: true, parallelToolCalls: true },
    // eslint-disable-next-line require-yield
    async *stream() {
      throw new Error('model exploded');
    },
  };
}

function post(url: string, body: unknown): Promise<Response> {
  return fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) });
}

async function waitFor(pred: () => Promise<boolean>, timeoutMs = 5000): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!(await pred())) {
    if (Date.now() > end) throw new Error('condition not met');
    await new Promise((r) => setTimeout(r, 25));
  }
}

