/**
 * Issue 11, defect 3 and the findings "SSRF exfiltrates" and "webhook URL": tenant URLs (tool
 * endpoints, provider base_url, agent webhook_url) may not reach internal addresses.
 *
 * Loopback stands in for the internal network. 127.0.0.1 is "allowed" where a test needs a
 * reachable server (exactly 127.0.0.1/32 listed), so 127.0.0.2 and [::1] are internal hosts; each
 * runs a server that records everything reaching it, which is how "the credential was never
 * sent" is proven. The control plane runs with OUTBOUND_ALLOW_CIDRS empty (the default).
 */
import http from 'node:http';
import net from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../shared/clock.js';
import { loadConfig } from '../../shared/config.js';
import { systemError } from '../../shared/errors.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import { createOutboundClient, type OutboundClient, type Resolver } from '../../shared/outbound/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import type { EngineNode } from '../../media-engine/node.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { createProviders } from '../../shared/providers/registry.js';
import { captureLogger, startTestInfra, type TestInfra } from '../helpers/infra.js';
import { sessionConfig, weatherTool } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { createTestUser, expectInvalid, restClient, type Call, type TestUser } from '../unit/agents/support.js';

interface Hit {
  url?: string;
  headers: http.IncomingHttpHeaders;
}

/** Records every request; `/redirect?to=` answers 302. Anything else: a JSON "internal secret". */
async function recorder(host: string) {
  const hits: Hit[] = [];
  const server = http.createServer((req, res) => {
    hits.push({ url: req.url, headers: req.headers });
    req.resume();
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/redirect') return void res.writeHead(302, { location: u.searchParams.get('to') ?? '/' }).end();
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ forecast: { summary: 'INTERNAL-SECRET' } }));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return { server, hits, port, origin: host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}` };
}

/** A raw TCP listener counting connections (a WebSocket endpoint that must never be reached). */
async function tcpCounter(host: string) {
  const state = { connections: 0, bytes: '' };
  const server = net.createServer((s) => {
    state.connections++;
    s.on('data', (d) => (state.bytes += d.toString('latin1')));
    s.on('error', () => undefined);
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  return { server, state, port: (server.address() as AddressInfo).port };
}

let allowed: Awaited<ReturnType<typeof recorder>>;
let internal: Awaited<ReturnType<typeof recorder>>;
let internalV6: Awaited<ReturnType<typeof recorder>>;
let wsInternal: Awaited<ReturnType<typeof tcpCounter>>;

beforeAll(async () => {
  allowed = await recorder('127.0.0.1');
  internal = await recorder('127.0.0.2');
  internalV6 = await recorder('::1');
  wsInternal = await tcpCounter('127.0.0.2');
});

afterAll(async () => {
  for (const s of [allowed?.server, internal?.server, internalV6?.server]) {
    s?.closeAllConnections();
    await new Promise((r) => s?.close(r));
  }
  await new Promise((r) => wsInternal?.server.close(r));
});

/** Literal forms of internal hosts as a workspace member would type them. */
const LITERAL_INTERNAL_URLS = [
  'http://127.0.0.3:8080/',
  'http://2130706435:8080/',
  'http://0x7f000001/',
  'http://0177.0.0.1/',
  'http://127.1/',
  'http://0.0.0.0:8080/',
  'http://localhost:8080/',
  'http://[::1]:8080/',
  'http://[::ffff:127.0.0.3]:8080/',
  'http://169.254.169.254/latest/meta-data/',
  'http://10.0.0.5/',
  'http://[fd00::1]/',
];

describe('webhook URL and SSRF at save time (control plane, OUTBOUND_ALLOW_CIDRS empty)', () => {
  let infra: TestInfra;
  let cp: ControlPlane;
  let call: Call;
  let owner: TestUser;
  let agentId = '';
  const orgKey = `org_${'s'.repeat(24)}`;

  beforeAll(async () => {
    infra = await startTestInfra({ orgApiKey: orgKey }, { OUTBOUND_ALLOW_CIDRS: '' });
    cp = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
    call = restClient(cp);
    owner = await createTestUser(cp);
    agentId = (await call('POST', '/agents', owner.token, { workspace_id: owner.workspaceId, name: 'ssrf' })).body.data.id;
  });

  afterAll(async () => {
    await cp?.close();
    await infra?.close();
  });

  it('agent webhook_url on an internal address is 400 naming webhook_url', async () => {
    expectInvalid(await call('PUT', `/agents/${agentId}/telephony`, owner.token, { webhook_url: 'http://127.0.0.1:1/' }), 'webhook_url');
    for (const url of LITERAL_INTERNAL_URLS) expectInvalid(await call('PUT', `/agents/${agentId}/telephony`, owner.token, { webhook_url: url }), 'webhook_url');
    expectInvalid(await call('PUT', `/agents/${agentId}/telephony`, owner.token, { webhook_url: 'https://user:pw@hooks.example.com/x' }), 'webhook_url');
    const ok = await call('PUT', `/agents/${agentId}/telephony`, owner.token, { webhook_url: 'https://hooks.example.com/x' });
    expect(ok.status).toBe(200);
    expect(ok.body.data.webhook_url).toBe('https://hooks.example.com/x');
  });

  it('tool endpoint_url on an internal address is 400 naming endpoint_url (create and update)', async () => {
    for (const url of LITERAL_INTERNAL_URLS) expectInvalid(await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'probe', endpoint_url: url }), 'endpoint_url');
    const created = await call('POST', `/agents/${agentId}/tools`, owner.token, { name: 'probe', endpoint_url: 'https://api.example.com/weather' });
    expect(created.status).toBe(201);
    expectInvalid(await call('PUT', `/agents/${agentId}/tools/${created.body.data.id}`, owner.token, { endpoint_url: 'http://[::ffff:127.0.0.1]/' }), 'endpoint_url');
  });

  it('provider base_url on an internal address is 400 naming base_url (agent providers and definitions)', async () => {
    for (const url of LITERAL_INTERNAL_URLS) {
      expectInvalid(await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai_compatible', base_url: url, api_key: 'sk-x' }), 'base_url');
    }
    expectInvalid(await call('POST', '/providers', orgKey, { name: 'local-llm', provider_type: 'llm', base_url: 'http://127.0.0.1:11434/v1' }), 'base_url');
    const ok = await call('POST', `/agents/${agentId}/providers`, owner.token, { provider_type: 'llm', provider_name: 'openai_compatible', base_url: 'https://llm.example.com/v1' });
    expect(ok.status).toBe(200);
  });
});

describe('SSRF exfiltrates: provider base_url at connect time', () => {
  let outbound: OutboundClient;
  const dns: Record<string, string> = { 'llm.internal.test': '127.0.0.2', 'asr.internal.test': '127.0.0.2' };
  const resolver: Resolver = async (name) => (dns[name] ? [{ address: dns[name]!, family: 4 }] : Promise.reject(systemError('ENOTFOUND', 'ENOTFOUND')));

  beforeAll(() => {
    outbound = createOutboundClient({ allowCidrs: ['127.0.0.1/32'], resolver });
  });
  afterAll(async () => {
    await outbound?.close();
  });

  it('an HTTP provider on an internal address fails OUTBOUND_REFUSED and never receives the key', async () => {
    const before = internal.hits.length;
    for (const base of [`${internal.origin}/v1`, `http://llm.internal.test:${internal.port}/v1`, `http://[::ffff:127.0.0.2]:${internal.port}/v1`, `${internalV6.origin}/v1`]) {
      const { llm } = createProviders({ llm: { provider_name: 'openai_compatible', base_url: base, api_key: 'sk-provider-secret', model_name: 'm' } }, { clock: realClock, outbound });
      const stream = llm!.stream({ messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal });
      await expect(
        (async () => {
          for await (const _ of stream) void _;
        })(),
      ).rejects.toMatchObject({ name: 'ProviderError', code: 'OUTBOUND_REFUSED', retryable: false });
    }
    expect(internal.hits.length - before).toBe(0);
    expect(internalV6.hits).toHaveLength(0);
  });

  it('a WebSocket provider (Deepgram) on an internal address is refused before the upgrade carries the key', async () => {
    for (const base of [`ws://127.0.0.2:${wsInternal.port}`, `http://asr.internal.test:${wsInternal.port}`]) {
      const { asr } = createProviders({ asr: { provider_name: 'deepgram', base_url: base, api_key: 'dg-provider-secret' } }, { clock: realClock, outbound });
      const s = asr!.stream({ sampleRateHz: 16000, encoding: 'linear16' });
      const events: Array<{ type: string; code?: string; recoverable?: boolean }> = [];
      for await (const ev of s) {
        events.push(ev as never);
        if (ev.type === 'error' && !(ev as { recoverable?: boolean }).recoverable) break;
      }
      s.close();
      // One attempt, given up at once: a refusal is permanent, not a reconnect loop.
      expect(events.filter((e) => e.type === 'error')).toEqual([expect.objectContaining({ code: 'OUTBOUND_REFUSED', recoverable: false })]);
    }
    expect(wsInternal.state.connections).toBe(0);
    expect(wsInternal.state.bytes).not.toContain('dg-provider-secret');
  });
});

describe('SSRF exfiltrates: a refused tool call during a real call', () => {
  let node: EngineNode;
  let registry: MemoryRegistry;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    node = await startSimEngine({
      // Exactly the "allowed" server's address; 127.0.0.2 and ::1 stay internal.
      config: loadConfig({ OUTBOUND_ALLOW_CIDRS: '127.0.0.1/32' }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 4, maxSockets: 8 }),
      logger: captureLogger().logger,
      registry,
      // Short replies: sim TTS speaks them in real time and a turn completes after playout.
      llm: { script: { rules: [{ when: 'weather', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], afterTool: 'Done.' }] } },
    });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  async function callWithTool(endpointUrl: string): Promise<VoiceClient> {
    const cfg: SessionConfig = sessionConfig({ tools: [weatherTool(endpointUrl)], silence_timeout_ms: 60_000 });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`);
    await c.waitForType('pipeline_ready');
    return c;
  }

  async function askWeather(c: VoiceClient, turn: number) {
    const from = c.events.length;
    c.sendJson({ type: 'text_inject', text: 'what is the weather', role: 'user' });
    const result = await c.waitFor((e) => e.type === 'tool_call_result', 10_000, from);
    const done = await c.waitFor((e) => e.type === 'turn_complete', 15_000, from);
    expect(done.turn).toBe(turn);
    return { result: String(result.result), assistant: String(done.assistant_text) };
  }

  it('an internal tool URL (any spelling, or a redirect to one) becomes an error result, the credential never leaves, the call goes on', { timeout: 90_000 }, async () => {
    const targets = [
      `${internal.origin}/weather`,
      `http://2130706434:${internal.port}/weather`,
      `http://[::ffff:127.0.0.2]:${internal.port}/weather`,
      `${internalV6.origin}/weather`,
      // Allowed host, redirecting to an internal one: tools follow no redirect.
      `${allowed.origin}/redirect?to=${encodeURIComponent(`${internal.origin}/weather`)}`,
    ];
    const c = await callWithTool(targets[0]!);
    try {
      const first = await askWeather(c, 1);
      expect(JSON.parse(first.result)).toEqual({ error: expect.stringContaining('refused') });
      expect(first.assistant).toBe('Done.');
      // The call continues: the next turn is answered normally.
      const from = c.events.length;
      c.sendJson({ type: 'text_inject', text: 'thank you', role: 'user' });
      const next = await c.waitFor((e) => e.type === 'turn_complete', 15_000, from);
      expect(next).toMatchObject({ turn: 2, assistant_text: 'You said: thank you.' });
    } finally {
      c.close();
    }
    for (const target of targets.slice(1)) {
      const other = await callWithTool(target);
      try {
        const { result, assistant } = await askWeather(other, 1);
        expect(JSON.parse(result).error, target).toMatch(/refused|redirects are not followed/);
        expect(result).not.toContain('INTERNAL-SECRET');
        expect(assistant).toBe('Done.');
      } finally {
        other.close();
      }
    }
    expect(internal.hits).toHaveLength(0);
    expect(internalV6.hits).toHaveLength(0);
    // The allowed server saw the redirect request (with the token: it is the configured host), nothing followed it.
    expect(allowed.hits.map((h) => h.url?.split('?')[0])).toEqual(['/redirect']);
  });
});
