/**
 * Finding "Redis outage hangs the API" (issue 11): the control plane and an engine node (two
 * registry clients, as two processes) reach the machine's Redis through a TCP proxy. With a live
 * browser call up, Redis is cut: session start, login, `/telephony/calls` and `/text` answer 503
 * with Retry-After within ~2 s (they hung for the whole outage), `/ready` says registry down.
 * Then Redis comes back EMPTY (this suite's keys deleted, as after a restart without persistence):
 * each process writes again what it owns, so the live call can be injected into and ended again,
 * and `/ready` follows.
 */
import http from 'node:http';
import { randomBytes } from 'node:crypto';
import { createClient } from 'redis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { RedisRegistry } from '../../shared/registry/index.js';
import { api, createTestUser, type ApiResponse, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { TcpProxy } from '../helpers/tcp-proxy.js';
import { VoiceClient } from '../helpers/voice-client.js';

let proxy: TcpProxy;
let infra: TestInfra;
let app: ControlPlane;
let engineRegistry: RedisRegistry;
let engine: EngineNode;
let user: TestUser;
let agentId = '';
let client: VoiceClient | undefined;
const direct = createClient({ url: TEST_REDIS_URL });

beforeAll(async () => {
  await direct.connect();
  const target = new URL(TEST_REDIS_URL);
  proxy = await TcpProxy.start(target.hostname, Number(target.port || 6379));
  const redisUrl = proxy.urlFor(TEST_REDIS_URL);
  infra = await startTestInfra({ orgApiKey: `org_${randomBytes(18).toString('hex')}` }, { REDIS_URL: redisUrl });
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  // The engine is "another process": its own registry client, same Redis (through the proxy) and prefix.
  engineRegistry = await RedisRegistry.connect({ url: redisUrl, prefix: infra.registryPrefix, commandTimeoutMs: 1000 });
  engine = await startEngineNode({
    config: loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 50 }),
    logger: infra.logger,
    clock: realClock,
    registry: engineRegistry,
    nodeId: 'node-outage',
    port: 0,
    heartbeatMs: 500,
    providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({}), tts: createSimTts() }),
  });
  user = await createTestUser(app);
  const created = await api(app, 'POST', '/api/v1/agents', { token: user.token, body: { workspace_id: user.workspaceId, name: 'Outage agent', system_prompt: 'Be brief.' } });
  agentId = created.body.data.id;
  for (const type of ['asr', 'llm', 'tts']) {
    const p = await api(app, 'POST', `/api/v1/agents/${agentId}/providers`, { token: user.token, body: { provider_type: type, provider_name: 'sim' } });
    if (p.status >= 300) throw new Error(`provider ${type}: ${p.status} ${JSON.stringify(p.body)}`);
  }
  const pub = await api(app, 'POST', `/api/v1/agents/${agentId}/versions/publish`, { token: user.token });
  if (pub.status >= 300) throw new Error(`publish: ${pub.status} ${JSON.stringify(pub.body)}`);
}, 60_000);

afterAll(async () => {
  client?.close();
  await engine?.close();
  await engineRegistry?.close();
  await app?.close();
  await infra?.close();
  await proxy?.close();
  await deletePrefix();
  await direct.quit();
});

/** What a Redis restart without persistence does to this suite: all of its keys are gone. */
async function deletePrefix(): Promise<number> {
  let n = 0;
  for await (const keys of direct.scanIterator({ MATCH: `${infra.registryPrefix}:*`, COUNT: 500 })) {
    if (keys.length) n += await direct.del(keys);
  }
  return n;
}

async function timed<T>(fn: () => Promise<T>): Promise<{ value: T; ms: number }> {
  const t = performance.now();
  const value = await fn();
  return { value, ms: performance.now() - t };
}

/** Polls `fn` until it answers `status` (bounded). */
async function eventually(fn: () => Promise<ApiResponse>, status: number, timeoutMs = 8000): Promise<ApiResponse> {
  const until = performance.now() + timeoutMs;
  let last: ApiResponse | undefined;
  while (performance.now() < until) {
    last = await fn();
    if (last.status === status) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`still ${last?.status} ${JSON.stringify(last?.body)} after ${timeoutMs} ms`);
}

function expect503Fast(r: { value: ApiResponse; ms: number }): void {
  expect(r.value.status, JSON.stringify(r.value.body)).toBe(503);
  expect(r.value.body.error.code).toBe('SERVICE_UNAVAILABLE');
  expect(Number(r.value.headers['retry-after'])).toBeGreaterThan(0);
  expect(r.ms).toBeLessThan(2000);
}

const startSession = () => api(app, 'POST', '/api/v1/voice/sessions/start', { body: { agent_id: agentId } });
const injectText = (sessionId: string) => api(app, 'POST', `/api/v1/voice/sessions/${sessionId}/text`, { body: { text: 'Are you still there?' } });

/** Status of the live transcript stream (SSE): the headers only, then the socket is dropped. */
function streamStatus(conversationId: string): Promise<{ status: number; ms: number }> {
  const t = performance.now();
  return new Promise((resolve, reject) => {
    const req = http.get({ host: '127.0.0.1', port: app.port, path: `/api/v1/conversations/${conversationId}/stream`, headers: { authorization: `Bearer ${user.token}` } }, (res) => {
      resolve({ status: res.statusCode ?? 0, ms: performance.now() - t });
      req.destroy();
    });
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('stream headers timed out')));
  });
}

describe('Redis outage hangs the API', () => {
  let sessionId = '';
  let conversationId = '';

  it('a live call is up', async () => {
    const started = await startSession();
    expect(started.status).toBe(200);
    sessionId = started.body.session_id;
    client = await VoiceClient.connect(started.body.ws_url, { sendAudio: false });
    await client.waitFor((e) => e.type === 'pipeline_ready', 10_000);
    expect((await injectText(sessionId)).status).toBe(200);
    const conv = await api(app, 'POST', '/api/v1/conversations', { token: user.token, body: { session_id: sessionId, agent_id: agentId } });
    expect(conv.status, JSON.stringify(conv.body)).toBe(201);
    conversationId = conv.body.data.id;
    expect((await streamStatus(conversationId)).status).toBe(200);
  }, 20_000);

  it('while Redis is down, routes that need it answer 503 with Retry-After within 2 s and /ready says registry down', async () => {
    proxy.reset();
    expect503Fast(await timed(startSession));
    expect503Fast(await timed(() => api(app, 'POST', '/api/v1/auth/login', { body: { email: user.email, password: user.password } })));
    expect503Fast(await timed(() => api(app, 'GET', '/api/v1/telephony/calls', { token: user.token })));
    expect503Fast(await timed(() => injectText(sessionId)));
    // The live transcript stream cannot subscribe: 503 at once, not a 200 that never carries a turn.
    const sse = await streamStatus(conversationId);
    expect(sse.status).toBe(503);
    expect(sse.ms).toBeLessThan(2000);
    const ready = await timed(() => api(app, 'GET', '/ready'));
    expect(ready.value.status).toBe(503);
    expect(ready.value.body.error.details).toEqual([{ field: 'registry', problem: 'down' }]);
    expect(ready.ms).toBeLessThan(1500);
    // Routes that do not need Redis keep working.
    expect((await api(app, 'GET', `/api/v1/agents/${agentId}`, { token: user.token })).status).toBe(200);
  }, 20_000);

  it('Redis back EMPTY: each process re-registers what it owns; the live call can be injected into and ended again', async () => {
    await deletePrefix();
    proxy.restore();
    await eventually(() => api(app, 'GET', '/ready'), 200);
    // Node presence, the session's config and owner, written again by the engine's registry.
    await eventually(() => injectText(sessionId), 200);
    expect(await direct.exists(`${infra.registryPrefix}:{s:${sessionId}}:owner`)).toBe(1);
    expect(await direct.get(`${infra.registryPrefix}:{s:${sessionId}}:owner`)).toBe('node-outage');
    expect((await api(app, 'GET', '/api/v1/telephony/calls', { token: user.token })).status).toBe(200);
    // The transcript bus has its own subscriber client, reconnecting on its own (jittered) schedule.
    await eventually(async () => ({ ...(await streamStatus(conversationId)), body: undefined }) as unknown as ApiResponse, 200);
    const end = await api(app, 'POST', `/api/v1/voice/sessions/${sessionId}/end`);
    expect(end.status, JSON.stringify(end.body)).toBe(200);
    await client!.waitFor((e) => e.type === 'call_ended', 10_000);
    // A new session starts and lands on the re-registered node.
    const again = await startSession();
    expect(again.status).toBe(200);
    expect(again.body.ws_url).toContain(`:${engine.port}/`);
  }, 30_000);
});
