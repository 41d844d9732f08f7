/**
 * Voice sessions over real HTTP: start (node choice, stored config with a 30 s deadline), text and
 * end routed to the owning node through the registry from another "replica", and the error table.
 * Part 1 uses real Redis (two registry instances, one prefix); part 2 the in-process registry
 * with a SimulatedClock to cross the connect deadline deterministically.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from '../../control-plane/health/service.js';
import { healthRoutes } from '../../control-plane/health/routes.js';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { createVoiceDomain, type LiveAgentConfig, type VoiceDomain } from '../../control-plane/voice/index.js';
import { createVoiceSessions, NODE_LIST_TTL_MS } from '../../control-plane/voice/sessions.js';
import { AppError, notFound } from '../../shared/errors.js';
import { SimulatedClock } from '../../shared/clock.js';
import { ENGINE_NODES_TOPIC, MemoryRegistry, RedisRegistry, type EngineNode, type NodeCommand, type Registry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';

const AGENT_OK = '0190f0a0-0000-7000-8000-000000000001';
const AGENT_NO_PROVIDERS = '0190f0a0-0000-7000-8000-000000000002';
const AGENT_UNPUBLISHED = '0190f0a0-0000-7000-8000-000000000003';
const LLM_KEY = 'sk-test-llm-9f8e7d';

function provider(kind: 'asr' | 'llm' | 'tts', name: string, apiKey = '', model = ''): NonNullable<LiveAgentConfig['providers']['asr']> {
  return { provider_type: kind, provider_name: name, api_key: apiKey, model_name: model, base_url: '', source: 'agent' };
}

/** A literal published agent, as the agents domain's liveConfig returns it (a pure input). */
function liveAgent(over: Partial<LiveAgentConfig> = {}): LiveAgentConfig {
  return {
    agent_id: AGENT_OK,
    workspace_id: 'ws-1',
    user_id: 'owner-1',
    version_number: 2,
    published_at: '2026-01-01T00:00:00.000Z',
    name: 'Test agent',
    description: '',
    system_prompt: 'You help {{customer|a caller}}.',
    welcome_message: 'Hello {{customer|there}}!',
    language: 'en',
    max_turns: 30,
    connection_type: 'voice',
    interrupt_enabled: true,
    vad_threshold: 0.5,
    silence_timeout_ms: 7000,
    is_active: true,
    allow_human_transfer: false,
    mode: 'single_prompt',
    metadata: { idle_max_attempts: 1 },
    connectors: [],
    providers: { asr: provider('asr', 'sim'), llm: provider('llm', 'openai', LLM_KEY, 'gpt-4o-mini'), tts: provider('tts', 'sim') },
    tools: [],
    knowledge: { always: [{ knowledge_base_id: 'kb1', title: 'Hours', content: 'Open 9 to 5.', content_type: 'text/plain' }], on_demand_ids: [] },
    flow: null,
    telephony: null,
    ...over,
  };
}

const AGENTS: Record<string, LiveAgentConfig> = {
  [AGENT_OK]: liveAgent(),
  [AGENT_NO_PROVIDERS]: liveAgent({ agent_id: AGENT_NO_PROVIDERS, providers: { asr: null, llm: provider('llm', 'sim'), tts: null } }),
  [AGENT_UNPUBLISHED]: liveAgent({ agent_id: AGENT_UNPUBLISHED, version_number: 0 }),
};

async function liveConfig(agentId: string): Promise<LiveAgentConfig> {
  const a = AGENTS[agentId];
  if (!a) throw notFound('agent');
  return a;
}

let heartbeatSeq = 0;
/** Each heartbeat gets a fresh `updatedAtMs`, as a real engine's would (it resets placement counts). */
function node(nodeId: string, load: number, capacity: number, updatedAtMs = ++heartbeatSeq): EngineNode {
  return { nodeId, wsUrl: `ws://engine-${nodeId.toLowerCase()}.test:8081`, load, capacity, updatedAtMs };
}

interface Answer {
  status: number;
  body: Record<string, any>;
  headers: Headers;
}

function client(base: () => string) {
  async function call(method: string, path: string, body?: unknown, rawBody?: string): Promise<Answer> {
    const res = await fetch(base() + path, {
      method,
      headers: body !== undefined || rawBody !== undefined ? { 'content-type': 'application/json' } : {},
      body: rawBody ?? (body !== undefined ? JSON.stringify(body) : undefined),
    });
    return { status: res.status, body: (await res.json()) as Record<string, any>, headers: res.headers };
  }
  return {
    call,
    start: (body: unknown) => call('POST', '/api/v1/voice/sessions/start', body),
    text: (id: string, body: unknown) => call('POST', `/api/v1/voice/sessions/${id}/text`, body),
    end: (id: string) => call('POST', `/api/v1/voice/sessions/${id}/end`),
  };
}

async function clearNodes(reg: Registry): Promise<void> {
  for (const n of await reg.nodes.listNodes()) await reg.nodes.removeNode(n.nodeId);
}

async function until(cond: () => boolean, timeoutMs = 2000): Promise<void> {
  const start = Date.now();
  while (!cond()) {
    if (Date.now() - start > timeoutMs) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

// ------------------------------------------------------------------------------------------------
describe('voice sessions with Redis: two replicas share one registry', () => {
  let infra: TestInfra;
  let server: RunningServer;
  let voice: VoiceDomain;
  /** The engine side: a second registry instance on the same Redis and prefix. */
  let engineReg: RedisRegistry;
  let redis: ReturnType<typeof createClient>;
  let stopServingB: () => Promise<void>;
  let stopServingA: () => Promise<void>;
  const received: NodeCommand[] = [];
  let base = '';
  const api = client(() => base);

  beforeAll(async () => {
    infra = await startTestInfra();
    voice = createVoiceDomain({ registry: infra.registry, clock: infra.clock, logger: infra.logger, liveConfig, nodeListTtlMs: 0 });
    server = await startControlPlaneServer({
      port: 0,
      host: '127.0.0.1',
      logger: infra.logger,
      maxBodyBytes: 64 * 1024,
      services: [{ service: HealthService, impl: createHealthService(infra) }, ...voice.services],
      routes: [...healthRoutes, ...voice.routes],
    });
    base = `http://127.0.0.1:${server.port}`;
    engineReg = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix: infra.registryPrefix });
    stopServingB = await engineReg.commands.serveCommands('B', async (cmd) => {
      received.push(cmd);
      const text = (cmd.payload as { text?: string } | undefined)?.text;
      if (text === 'vanish') throw new AppError('NOT_FOUND', 'session not on this node');
      if (text === 'explode') throw new Error('pipeline reference missing');
      if (text === 'too fast') throw new AppError('RATE_LIMITED', 'injected text is rate-limited for this call');
      return { ok: true };
    });
    // A is a live node too (its commands served); a listed node nobody serves is a dead one.
    stopServingA = await engineReg.commands.serveCommands('A', async () => ({ ok: true }));
    redis = createClient({ url: TEST_REDIS_URL });
    await redis.connect();
  });

  afterAll(async () => {
    await stopServingB?.();
    await stopServingA?.();
    await server?.close();
    await voice?.close?.();
    await engineReg?.close();
    if (redis) {
      const keys = await redis.keys(`${infra.registryPrefix}:*`);
      if (keys.length) await redis.del(keys);
      await redis.quit();
    }
    await infra?.close();
  });

  beforeEach(async () => {
    received.length = 0;
    await clearNodes(engineReg);
  });

  async function startOnB(): Promise<string> {
    await engineReg.nodes.heartbeat(node('B', 0, 10), 60_000);
    const r = await api.start({ agent_id: AGENT_OK });
    expect(r.status).toBe(200);
    return r.body.session_id as string;
  }

  it('picks the least-loaded live node and answers the spec shape plus ws_url', async () => {
    await engineReg.nodes.heartbeat(node('A', 5, 10), 60_000);
    await engineReg.nodes.heartbeat(node('B', 1, 10), 60_000);
    const r = await api.start({ agent_id: AGENT_OK, dynamic_variables: { customer: 'Jo' } });
    expect(r.status).toBe(200);
    const id = r.body.session_id as string;
    expect(r.body).toEqual({
      session_id: id,
      agent_id: AGENT_OK,
      welcome_message: 'Hello Jo!',
      status: 'active',
      ws_url: `ws://engine-b.test:8081/api/v1/voice/ws/${id}`,
    });
    // 24 random bytes, base64url: a bearer-grade id.
    expect(id).toMatch(/^[A-Za-z0-9_-]{32}$/);
    await until(() => received.some((c) => c.kind === 'prewarm' && c.sessionId === id));
  });

  it('stores the resolved config on the chosen node with a 30 s connect deadline (Redis TTL)', async () => {
    const id = await startOnB();
    const stored = await engineReg.sessions.getSession(id);
    expect(stored).toMatchObject({ sessionId: id, agentId: AGENT_OK, nodeId: 'B' });
    expect(stored!.connectDeadlineMs - stored!.createdAtMs).toBe(30_000);
    const cfg = stored!.config as SessionConfig;
    expect(cfg).toMatchObject({ session_id: id, agent_id: AGENT_OK, agent_version: 2, idle_max_attempts: 1, max_turns: 30, call_direction: 'inbound' });
    expect(cfg.system_prompt).toBe('You help a caller.\n\n## Knowledge\n### Hours\nOpen 9 to 5.');
    expect(cfg.providers.llm.api_key).toBe(LLM_KEY);
    const ttl = await redis.pTTL(`${infra.registryPrefix}:{s:${id}}:cfg`);
    expect(ttl).toBeGreaterThan(28_000);
    expect(ttl).toBeLessThanOrEqual(30_000);
  });

  it('reuses one node listing for NODE_LIST_TTL_MS; a node that starts draining drops it on every replica', async () => {
    // Another replica with the default listing TTL and its own clock, so "within the TTL" is exact.
    const clock = new SimulatedClock(Date.now());
    const replica = createVoiceSessions({ registry: infra.registry, clock, logger: infra.logger, liveConfig });
    try {
      await engineReg.nodes.heartbeat(node('A', 0, 10), 60_000);
      expect((await replica.start({ agent_id: AGENT_OK })).node_id).toBe('A');
      // B joins and A fills up: within the TTL the listing of a moment ago still places on A.
      await engineReg.nodes.heartbeat(node('B', 0, 10), 60_000);
      await engineReg.nodes.heartbeat(node('A', 10, 10), 60_000);
      clock.advance(NODE_LIST_TTL_MS - 1);
      expect((await replica.start({ agent_id: AGENT_OK })).node_id).toBe('A');
      // Past the TTL the registry is listed again.
      clock.advance(1);
      expect((await replica.start({ agent_id: AGENT_OK })).node_id).toBe('B');

      // A drains (engine side: heartbeat with draining, then the notice through Redis pub/sub):
      // the replica's fresh listing is dropped at once, not after the TTL.
      // (A is large, so the placements of the loop below never make B the less loaded.)
      // (B's first heartbeat after this replica's placement on it may not count it yet, so that
      // placement is still added: B shows 9 of 10, not full.)
      await engineReg.nodes.heartbeat(node('A', 0, 1000), 60_000);
      await engineReg.nodes.heartbeat(node('B', 8, 10), 60_000);
      clock.advance(NODE_LIST_TTL_MS);
      expect((await replica.start({ agent_id: AGENT_OK })).node_id).toBe('A');
      await engineReg.nodes.heartbeat({ ...node('A', 0, 1000), draining: true }, 60_000);
      await engineReg.invalidations.publish(ENGINE_NODES_TOPIC, 'A');
      let placedOn = '';
      const deadline = Date.now() + 2000;
      while (placedOn !== 'B' && Date.now() < deadline) {
        placedOn = (await replica.start({ agent_id: AGENT_OK })).node_id;
        if (placedOn !== 'B') await new Promise((r) => setTimeout(r, 10));
      }
      expect(placedOn).toBe('B');
    } finally {
      await replica.close();
    }
  });

  it('skips a node at capacity even when its absolute load is lower', async () => {
    await engineReg.nodes.heartbeat(node('A', 2, 2), 60_000);
    await engineReg.nodes.heartbeat(node('B', 6, 10), 60_000);
    const r = await api.start({ agent_id: AGENT_OK });
    expect(r.status).toBe(200);
    expect(r.body.ws_url).toMatch(/^ws:\/\/engine-b\.test:8081\//);
  });

  it('spreads a burst between heartbeats instead of piling onto one node', async () => {
    // Its own replica: the shared one still counts placements of earlier tests that no heartbeat covered.
    const replica = createVoiceSessions({ registry: infra.registry, clock: infra.clock, logger: infra.logger, liveConfig, nodeListTtlMs: 0 });
    try {
      await engineReg.nodes.heartbeat(node('A', 0, 10, 999_999), 60_000);
      await engineReg.nodes.heartbeat(node('B', 0, 10, 999_999), 60_000);
      const hosts: string[] = [];
      for (let i = 0; i < 4; i++) hosts.push((await replica.start({ agent_id: AGENT_OK })).node_id);
      expect(hosts.sort()).toEqual(['A', 'A', 'B', 'B']);
    } finally {
      await replica.close();
    }
  });

  it('never places past capacity under concurrent starts, and forgets placements a later heartbeat counts', async () => {
    const clock = new SimulatedClock(Date.now());
    const replica = createVoiceSessions({ registry: infra.registry, clock, logger: infra.logger, liveConfig });
    try {
      await engineReg.nodes.heartbeat(node('A', 0, 5, clock.now()), 60_000);
      const first = await Promise.allSettled(Array.from({ length: 12 }, () => replica.start({ agent_id: AGENT_OK })));
      expect(first.filter((r) => r.status === 'fulfilled')).toHaveLength(5);
      for (const r of first) if (r.status === 'rejected') expect((r.reason as AppError).code).toBe('SERVICE_UNAVAILABLE');

      // The next listing still sees the old heartbeat: the five are kept, A stays full.
      clock.advance(NODE_LIST_TTL_MS);
      await expect(replica.start({ agent_id: AGENT_OK })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      // A new heartbeat (written after that listing, so after the five) says 2 calls remain: 3 slots free.
      await engineReg.nodes.heartbeat(node('A', 2, 5, clock.now()), 60_000);
      clock.advance(NODE_LIST_TTL_MS);
      const second = await Promise.allSettled(Array.from({ length: 6 }, () => replica.start({ agent_id: AGENT_OK })));
      expect(second.filter((r) => r.status === 'fulfilled')).toHaveLength(3);
    } finally {
      await replica.close();
    }
  });

  it('a session ended here frees its slot at once: start-and-end churn on a small node is never "at capacity"', async () => {
    const clock = new SimulatedClock(Date.now());
    const replica = createVoiceSessions({ registry: infra.registry, clock, logger: infra.logger, liveConfig });
    try {
      // One heartbeat for the whole run (a quiet spell between heartbeats): nothing else frees a slot.
      await engineReg.nodes.heartbeat(node('A', 0, 2, clock.now()), 60_000);
      for (let i = 0; i < 6; i++) {
        const s = await replica.start({ agent_id: AGENT_OK });
        await replica.end(s.session_id);
        clock.advance(NODE_LIST_TTL_MS);
      }
      // Two placed and still live fill it; ending one frees one slot.
      const [a] = await Promise.all([replica.start({ agent_id: AGENT_OK }), replica.start({ agent_id: AGENT_OK })]);
      await expect(replica.start({ agent_id: AGENT_OK })).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      await replica.end(a.session_id);
      expect((await replica.start({ agent_id: AGENT_OK })).node_id).toBe('A');
    } finally {
      await replica.close();
    }
  });

  it('a node still listed but serving no commands (killed; its heartbeat not lapsed yet) gets no session', async () => {
    // The dead node is the least loaded: it would be picked first.
    await engineReg.nodes.heartbeat(node('DEAD', 0, 10), 60_000);
    await engineReg.nodes.heartbeat(node('B', 4, 10), 60_000);
    const r = await api.start({ agent_id: AGENT_OK });
    expect(r.status).toBe(200);
    expect(r.body.ws_url).toMatch(/^ws:\/\/engine-b\.test:8081\//);
    expect((await engineReg.sessions.getSession(r.body.session_id as string))?.nodeId).toBe('B');
    expect(infra.logLines.some((l) => l.includes('"nodeId":"DEAD"') && l.includes('not serving its commands'))).toBe(true);
    // Only dead nodes listed: 503, retryable, saying so; nothing stored for them.
    await clearNodes(engineReg);
    await engineReg.nodes.heartbeat(node('DEAD', 0, 10), 60_000);
    const none = await api.start({ agent_id: AGENT_OK });
    expect([none.status, none.headers.get('retry-after')]).toEqual([503, '1']);
    expect(none.body.error.message).toMatch(/serves its commands/);
    expect(await engineReg.sessions.pendingOn('DEAD')).toEqual([]);
  });

  it('no live node, or every node full -> 503 SERVICE_UNAVAILABLE with retry-after', async () => {
    const none = await api.start({ agent_id: AGENT_OK });
    expect(none.status).toBe(503);
    expect(none.body.error.code).toBe('SERVICE_UNAVAILABLE');
    expect(none.headers.get('retry-after')).toBe('1');
    await engineReg.nodes.heartbeat(node('A', 3, 3), 60_000);
    const full = await api.start({ agent_id: AGENT_OK });
    expect(full.status).toBe(503);
    expect(full.body.error.code).toBe('SERVICE_UNAVAILABLE');
  });

  it('text is routed to the owner through the registry and answered', async () => {
    const id = await startOnB();
    expect(await engineReg.sessions.claimSession(id, 'B', 60_000)).toMatchObject({ status: 'claimed' });
    const r = await api.text(id, { text: 'What are your hours?' });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ session_id: id, status: 'injected', text: 'What are your hours?' });
    expect(received).toContainEqual({ kind: 'text', sessionId: id, payload: { text: 'What are your hours?', role: 'user' } });
    const sys = await api.text(id, { text: 'Offer a discount.', role: 'system' });
    expect(sys.status).toBe(200);
    expect(received).toContainEqual({ kind: 'text', sessionId: id, payload: { text: 'Offer a discount.', role: 'system' } });
  });

  it('end is routed to the owner', async () => {
    const id = await startOnB();
    await engineReg.sessions.claimSession(id, 'B', 60_000);
    const r = await api.end(id);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ session_id: id, status: 'ended' });
    expect(received).toContainEqual({ kind: 'end', sessionId: id });
  });

  it('the owner answering NOT_FOUND -> 404; any other node failure -> 500', async () => {
    const id = await startOnB();
    await engineReg.sessions.claimSession(id, 'B', 60_000);
    const gone = await api.text(id, { text: 'vanish' });
    expect(gone.status).toBe(404);
    expect(gone.body.error.code).toBe('NOT_FOUND');
    const broken = await api.text(id, { text: 'explode' });
    expect(broken.status).toBe(500);
    expect(broken.body.error.code).toBe('INTERNAL');
  });

  it('the owner refusing injected text (per-call rate limit) -> 429 with Retry-After', async () => {
    const id = await startOnB();
    await engineReg.sessions.claimSession(id, 'B', 60_000);
    const r = await api.text(id, { text: 'too fast' });
    expect(r.status).toBe(429);
    expect(r.body.error.code).toBe('RATE_LIMITED');
    expect(r.headers.get('retry-after')).toBe('1');
  });

  it('just after the registry reconnected (Redis maybe back empty), a missing session or claim is 503 retry, never 404 / 409 / purged', async () => {
    let restoring = true;
    const registry = { ...infra.registry, reconnectedWithin: () => restoring } as Registry;
    const replica = createVoiceSessions({ registry, clock: infra.clock, logger: infra.logger, liveConfig });
    try {
      await engineReg.nodes.heartbeat(node('A', 0, 10), 60_000);
      // Started, its engine's claim not written back yet: neither "not connected" nor purged by an end.
      const started = await replica.start({ agent_id: AGENT_OK });
      await expect(replica.injectText(started.session_id, 'hello')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      await expect(replica.end(started.session_id)).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      expect(await infra.registry.sessions.getSession(started.session_id)).toBeDefined();
      // Nothing at all (a live call whose entries are not back yet): not "session not found".
      await expect(replica.injectText('x'.repeat(32), 'hello')).rejects.toMatchObject({ code: 'SERVICE_UNAVAILABLE' });
      restoring = false;
      await expect(replica.injectText('x'.repeat(32), 'hello')).rejects.toMatchObject({ code: 'NOT_FOUND' });
      await expect(replica.injectText(started.session_id, 'hello')).rejects.toMatchObject({ code: 'CONFLICT' });
    } finally {
      await replica.close();
    }
  });

  it('an owner that does not answer (dead node) -> 404', async () => {
    const id = await startOnB();
    await engineReg.sessions.claimSession(id, 'C-dead', 60_000);
    expect((await api.text(id, { text: 'hello' })).status).toBe(404);
    expect((await api.end(id)).status).toBe(404);
  });

  it('an owner still listed but not answering (its command subscription reconnecting) -> 503, retryable', async () => {
    const id = await startOnB();
    // Full (load = capacity): never chosen for the other tests' sessions while it is listed.
    await engineReg.nodes.heartbeat(node('C-mute', 10, 10), 60_000);
    try {
      await engineReg.sessions.claimSession(id, 'C-mute', 60_000);
      const r = await api.text(id, { text: 'hello' });
      expect(r.status).toBe(503);
      expect(r.body.error.code).toBe('SERVICE_UNAVAILABLE');
      expect(r.headers.get('retry-after')).toBe('1');
    } finally {
      await engineReg.nodes.removeNode('C-mute');
    }
  });

  it('stored but unclaimed: text -> 409; end purges it from any replica and tells its node (which drops what it pre-warmed)', async () => {
    const id = await startOnB();
    const t = await api.text(id, { text: 'hello' });
    expect(t.status).toBe(409);
    expect(t.body.error.code).toBe('CONFLICT');
    const e = await api.end(id);
    expect(e.status).toBe(200);
    expect(e.body).toEqual({ session_id: id, status: 'ended' });
    expect(received.filter((c) => c.sessionId === id && c.kind === 'end')).toEqual([{ kind: 'end', sessionId: id, payload: { reason: 'ended_by_api' } }]);
    expect(await engineReg.sessions.getSession(id)).toBeUndefined();
    expect(await engineReg.sessions.claimSession(id, 'B', 60_000)).toEqual({ status: 'not_found' });
    expect((await api.text(id, { text: 'hello' })).status).toBe(404);
  });

  it('unknown session -> 404 on text and end', async () => {
    for (const r of [await api.text('nope-not-a-session', { text: 'hi' }), await api.end('nope-not-a-session'), await api.end('x'.repeat(300))]) {
      expect(r.status).toBe(404);
      expect(r.body).toEqual({ error: { code: 'NOT_FOUND', message: expect.any(String) } });
    }
  });

  it('agent errors: unknown 404, never published 409, missing providers 400 naming them, foreign workspace 404', async () => {
    await engineReg.nodes.heartbeat(node('B', 0, 10), 60_000);
    const unknown = await api.start({ agent_id: '0190f0a0-0000-7000-8000-0000000000ff' });
    expect(unknown.status).toBe(404);
    expect(unknown.body.error.code).toBe('NOT_FOUND');
    const unpublished = await api.start({ agent_id: AGENT_UNPUBLISHED });
    expect(unpublished.status).toBe(409);
    expect(unpublished.body.error.code).toBe('CONFLICT');
    const missing = await api.start({ agent_id: AGENT_NO_PROVIDERS });
    expect(missing.status).toBe(400);
    expect(missing.body.error.code).toBe('MISSING_PROVIDER');
    expect(missing.body.error.details).toEqual([
      { field: 'providers.asr', problem: 'missing' },
      { field: 'providers.tts', problem: 'missing' },
    ]);
    const foreign = await api.start({ agent_id: AGENT_OK, workspace_id: 'ws-other' });
    expect(foreign.status).toBe(404);
  });

  it('bad input -> 400 naming the field; invalid JSON -> INVALID_BODY', async () => {
    await engineReg.nodes.heartbeat(node('B', 0, 10), 60_000);
    const cases: Array<[unknown, string]> = [
      [{}, 'agent_id'],
      [{ agent_id: 5 }, 'agent_id'],
      [{ agent_id: AGENT_OK, max_turns: 'many' }, 'max_turns'],
      [{ agent_id: AGENT_OK, max_turns: 0 }, 'max_turns'],
      [{ agent_id: AGENT_OK, max_turns: 1.5 }, 'max_turns'],
      // Plain JSON types, as on every REST body (proto3 JSON would read "5" as 5).
      [{ agent_id: AGENT_OK, max_turns: '5' }, 'max_turns'],
      [{ agent_id: AGENT_OK, language: 7 }, 'language'],
      [{ agent_id: AGENT_OK, welcome_mode: 'shout' }, 'welcome_mode'],
      [{ agent_id: AGENT_OK, call_direction: 'up' }, 'call_direction'],
      [{ agent_id: AGENT_OK, dynamic_variables: ['x'] }, 'dynamic_variables'],
      [{ agent_id: AGENT_OK, session_metadata: 'x' }, 'session_metadata'],
      [{ agent_id: AGENT_OK, knowledge_base_ids: 'kb1' }, 'knowledge_base_ids'],
      // A string or an object (a number was folded into the prompt as text).
      [{ agent_id: AGENT_OK, call_details: 5 }, 'call_details'],
      [{ agent_id: AGENT_OK, call_details: ['a'] }, 'call_details'],
      // Free-form objects live in the registry for the whole call: bounded well below the body limit.
      [{ agent_id: AGENT_OK, session_metadata: { blob: 'x'.repeat(17 * 1024) } }, 'session_metadata'],
      [{ agent_id: AGENT_OK, dynamic_variables: { blob: 'x'.repeat(17 * 1024) } }, 'dynamic_variables'],
      // The offline `local` TTS speaks only its own voices.
      [{ agent_id: AGENT_OK, tts_provider: 'local', tts_voice: 'alloy' }, 'tts_voice'],
      [{ agent_id: AGENT_OK, tts_provider: 'local', tts_model: 'eleven_flash_v2_5' }, 'tts_model'],
    ];
    for (const [body, field] of cases) {
      const r = await api.start(body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.code).toBe('INVALID_REQUEST');
      expect(r.body.error.details?.[0]?.field).toBe(field);
    }
    const badJson = await api.call('POST', '/api/v1/voice/sessions/start', undefined, '{"agent_id":');
    expect(badJson.status).toBe(400);
    expect(badJson.body.error.code).toBe('INVALID_BODY');
    const array = await api.start([AGENT_OK]);
    expect(array.status).toBe(400);
    // A JSON null body is not an object (it read as {} and answered "agent_id: is required").
    const nullBody = await api.call('POST', '/api/v1/voice/sessions/start', undefined, 'null');
    expect(nullBody.body.error.code).toBe('INVALID_BODY');

    const id = await startOnB();
    await engineReg.sessions.claimSession(id, 'B', 60_000);
    for (const [body, field] of [
      [{}, 'text'],
      [{ text: '   ' }, 'text'],
      [{ text: 7 }, 'text'],
      [{ text: 'x'.repeat(4001) }, 'text'],
      [{ text: 'hi', role: 'assistant' }, 'role'],
    ] as Array<[unknown, string]>) {
      const r = await api.text(id, body);
      expect(r.status, JSON.stringify(body)).toBe(400);
      expect(r.body.error.details?.[0]?.field).toBe(field);
    }
    expect((await api.text(id, { text: 'x'.repeat(4000) })).status).toBe(200);
  });

  it('capabilities and voice health; ready is 503 without engine nodes', async () => {
    const caps = await api.call('GET', '/api/v1/voice/capabilities');
    expect(caps.status).toBe(200);
    expect(caps.body.transports).toEqual([
      { name: 'browser', path: '/api/v1/voice/ws/{session_id}', encoding: 'pcm_s16le', sample_rate_hz: 16000, channels: 1, events: true },
      { name: 'twilio', path: '/api/v1/voice/ws/twilio/{callSid}', encoding: 'mulaw', sample_rate_hz: 8000, channels: 1, events: false },
    ]);
    expect(caps.body.events).toContain('pipeline_ready');
    expect(caps.body.providers.tts).toContain('sim');
    expect(caps.body.connect_window_ms).toBe(30_000);
    for (const p of ['/api/v1/voice/health', '/api/v1/voice/healthz', '/api/v1/voice/live']) {
      const r = await api.call('GET', p);
      expect(r.status, p).toBe(200);
      expect(r.body).toEqual({ status: 'ok', service: 'voice' });
    }
    const notReady = await api.call('GET', '/api/v1/voice/ready');
    expect(notReady.status).toBe(503);
    expect(notReady.body.error.code).toBe('SERVICE_UNAVAILABLE');
    await engineReg.nodes.heartbeat(node('A', 2, 4), 60_000);
    await engineReg.nodes.heartbeat(node('B', 9, 10), 60_000);
    const ready = await api.call('GET', '/api/v1/voice/ready');
    expect(ready.status).toBe(200);
    expect(ready.body).toEqual({ status: 'ok', service: 'voice', engine_nodes: 2, free_slots: 3 });

    // A draining node takes no session (README audit: ready said 200 while starts got "at capacity").
    await engineReg.nodes.heartbeat({ ...node('A', 2, 4), draining: true }, 60_000);
    expect((await api.call('GET', '/api/v1/voice/ready')).body).toEqual({ status: 'ok', service: 'voice', engine_nodes: 1, free_slots: 1 });
    await engineReg.nodes.heartbeat({ ...node('B', 9, 10), unavailable: true }, 60_000);
    const none = await api.call('GET', '/api/v1/voice/ready');
    expect([none.status, none.body.error.message]).toEqual([503, 'no voice engine node accepts new sessions (draining or unavailable)']);
    const start = await api.start({ agent_id: AGENT_OK });
    expect([start.status, start.body.error?.message]).toEqual([503, 'no voice engine node accepts new sessions (draining or unavailable)']);
    await engineReg.nodes.heartbeat(node('A', 2, 4), 60_000);
    await engineReg.nodes.heartbeat(node('B', 9, 10), 60_000);
  });

  it('the same service answers Connect JSON', async () => {
    await engineReg.nodes.heartbeat(node('B', 0, 10), 60_000);
    const res = await fetch(`${base}/voiceplane.v1.VoiceService/StartSession`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ agentId: AGENT_OK, welcomeMode: 'none' }),
    });
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, unknown>;
    expect(body).toMatchObject({ agentId: AGENT_OK, status: 'active' });
    expect(body.welcomeMessage ?? '').toBe('');
  });

  it('never logs provider keys', () => {
    expect(infra.logLines.join('\n')).not.toContain(LLM_KEY);
  });
});

// ------------------------------------------------------------------------------------------------
describe('voice sessions with the in-process registry and simulated time', () => {
  const clock = new SimulatedClock();
  const registry = new MemoryRegistry(clock);
  let server: RunningServer;
  let voice: VoiceDomain;
  let base = '';
  const api = client(() => base);
  const received: NodeCommand[] = [];

  beforeAll(async () => {
    const { captureLogger } = await import('../helpers/infra.js');
    const { logger } = captureLogger('warn');
    voice = createVoiceDomain({ registry, clock, logger, liveConfig, nodeListTtlMs: 0 });
    server = await startControlPlaneServer({ port: 0, host: '127.0.0.1', logger, maxBodyBytes: 64 * 1024, services: voice.services, routes: voice.routes });
    base = `http://127.0.0.1:${server.port}`;
    await registry.nodes.heartbeat(node('M', 0, 4), 3_600_000);
    await registry.commands.serveCommands('M', async (cmd) => {
      received.push(cmd);
      if ((cmd.payload as { text?: string } | undefined)?.text === 'vanish') throw new AppError('NOT_FOUND', 'no such session here');
      return { ok: true };
    });
  });

  afterAll(async () => {
    await server?.close();
    await voice?.close?.();
    await registry.close();
  });

  it('an unconnected session is purged at the 30 s deadline', async () => {
    const r = await api.start({ agent_id: AGENT_OK });
    expect(r.status).toBe(200);
    const id = r.body.session_id as string;
    const stored = await registry.sessions.getSession(id);
    expect(stored!.connectDeadlineMs).toBe(clock.now() + 30_000);
    clock.advance(29_999);
    expect((await api.text(id, { text: 'hi' })).status).toBe(409);
    clock.advance(1);
    expect(await registry.sessions.getSession(id)).toBeUndefined();
    expect((await api.text(id, { text: 'hi' })).status).toBe(404);
    expect((await api.end(id)).status).toBe(404);
    expect(await registry.sessions.claimSession(id, 'M', 60_000)).toEqual({ status: 'not_found' });
  });

  it('a claimed session outlives the connect window and takes text and end', async () => {
    const id = (await api.start({ agent_id: AGENT_OK })).body.session_id as string;
    await registry.sessions.claimSession(id, 'M', 3_600_000);
    clock.advance(60_000);
    expect((await api.text(id, { text: 'still here?' })).body).toEqual({ session_id: id, status: 'injected', text: 'still here?' });
    expect((await api.text(id, { text: 'vanish' })).status).toBe(404);
    expect((await api.end(id)).body).toEqual({ session_id: id, status: 'ended' });
    expect(received.filter((c) => c.sessionId === id).map((c) => c.kind)).toEqual(['prewarm', 'text', 'text', 'end']);
  });

  it('an owner with no command handler -> 404', async () => {
    const id = (await api.start({ agent_id: AGENT_OK })).body.session_id as string;
    await registry.sessions.claimSession(id, 'ghost', 60_000);
    expect((await api.text(id, { text: 'hi' })).status).toBe(404);
  });

  it('programmatic startSession (telephony) carries call_id and reports the node', async () => {
    const s = await voice.startSession({ agent_id: AGENT_OK, call_direction: 'outbound', telephony_provider: 'twilio', connection_type: 'twilio', call_id: 'call-77' });
    expect(s).toMatchObject({ status: 'active', node_id: 'M', node_ws_url: 'ws://engine-m.test:8081' });
    const stored = await registry.sessions.getSession(s.session_id);
    expect(stored!.config).toMatchObject({ call_id: 'call-77', call_direction: 'outbound', telephony_provider: 'twilio', connection_type: 'twilio' });
  });
});
