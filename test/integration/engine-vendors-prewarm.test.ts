/**
 * Pre-warm through the engine's `prewarm` command with the real adapters (issue 6, "Done means" 3,
 * behaviour only; the numbers come from bench/prewarm.ts): the warm Deepgram and Cartesia sockets
 * are adopted by the call (the fakes see exactly one connection each for the session), and a
 * prewarmed session that never connects has its warm sockets closed when the window expires.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { normalizeSimText } from '../../shared/providers/sim/codec.js';
import { CartesiaFake } from '../fakes/cartesia.js';
import { DeepgramFake } from '../fakes/deepgram.js';
import { OpenAiFake } from '../fakes/openai.js';
import { captureLogger, TEST_OUTBOUND_ALLOW_CIDRS } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';

const EXPIRY_MS = 400;

let registry: MemoryRegistry;
/** Default 30 s window. */
let node: EngineNode;
/** A short window, so expiry is observable. */
let shortNode: EngineNode;
const clients: VoiceClient[] = [];

beforeAll(async () => {
  registry = new MemoryRegistry();
  const config = loadConfig({ OUTBOUND_ALLOW_CIDRS: TEST_OUTBOUND_ALLOW_CIDRS }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 20 });
  const base = { config, logger: captureLogger('warn').logger, clock: realClock, registry, port: 0 };
  node = await startEngineNode({ ...base, nodeId: 'prewarm-default' });
  shortNode = await startEngineNode({ ...base, nodeId: 'prewarm-short', prewarmTtlMs: EXPIRY_MS });
});

afterAll(async () => {
  for (const c of clients) c.close();
  await node?.close();
  await shortNode?.close();
  await registry?.close();
});

interface Fakes {
  deepgram: DeepgramFake;
  openai: OpenAiFake;
  cartesia: CartesiaFake;
}

async function withFakes(run: (f: Fakes) => Promise<void>): Promise<void> {
  const f: Fakes = { deepgram: new DeepgramFake(), openai: new OpenAiFake(), cartesia: new CartesiaFake() };
  await Promise.all([f.deepgram.start(), f.openai.start(), f.cartesia.start()]);
  try {
    await run(f);
  } finally {
    await Promise.all([f.deepgram.close(), f.openai.close(), f.cartesia.close()]);
  }
}

/** Deepgram + OpenAI + Cartesia: the two vendors with a `warm()` are both WebSockets. */
function providers(f: Fakes): SessionConfig['providers'] {
  return {
    asr: { provider_name: 'deepgram', api_key: f.deepgram.apiKey, base_url: f.deepgram.url, model_name: 'nova-3' },
    llm: { provider_name: 'openai', api_key: f.openai.apiKey, base_url: `${f.openai.url}/v1`, model_name: 'gpt-test' },
    tts: { provider_name: 'cartesia', api_key: f.cartesia.apiKey, base_url: f.cartesia.url, voice: 'voice-ca-1' },
  };
}

async function putSession(on: EngineNode, f: Fakes, overrides: Partial<SessionConfig> = {}): Promise<SessionConfig> {
  const cfg = sessionConfig({ providers: providers(f), welcome_message: 'hi there', silence_timeout_ms: 60_000, ...overrides });
  await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: on.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
  return cfg;
}

const prewarm = (on: EngineNode, sessionId: string) => registry.commands.sendCommand(on.nodeId, { kind: 'prewarm', sessionId }, 5000);

async function connect(on: EngineNode, sessionId: string): Promise<VoiceClient> {
  const c = await VoiceClient.connect(`ws://127.0.0.1:${on.port}/api/v1/voice/ws/${sessionId}`);
  clients.push(c);
  return c;
}

async function waitUntil(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

function bounded<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let t: NodeJS.Timeout | undefined;
  return Promise.race([p, new Promise<never>((_, reject) => (t = setTimeout(() => reject(new Error(`timed out waiting for ${what}`)), ms)))]).finally(() => clearTimeout(t));
}

/** Speaks a phrase and checks the transcription and the welcome, proving the adopted sockets work. */
async function holdsATurn(c: VoiceClient, phrase: string): Promise<void> {
  await c.waitForType('pipeline_ready', 5000);
  await waitUntil(() => c.heard.includes('hi there'), 10_000, `the welcome (heard: ${c.heard.join(' | ')})`);
  const from = c.events.length;
  await c.say(phrase);
  const tr = await c.waitFor((e) => e.type === 'transcription' && e.turn === 1, 10_000, from);
  expect(tr.text).toBe(phrase);
  await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1, 10_000, from);
  await waitUntil(() => c.heard.includes(normalizeSimText(`You said: ${phrase}`)), 10_000, 'the reply');
}

describe('pre-warm with the real adapters', () => {
  it('the warm Deepgram and Cartesia sockets are adopted by the call: one connection each', { timeout: 30_000 }, async () => {
    await withFakes(async (f) => {
      const cfg = await putSession(node, f);
      expect(await prewarm(node, cfg.session_id)).toEqual({ status: 'warm' });
      expect(f.deepgram.connections.map((x) => x.status)).toEqual([101]);
      expect(f.cartesia.connections.map((x) => x.status)).toEqual([101]);
      // The warm socket was opened for the call's format and language.
      expect(f.deepgram.connections[0]!.query.get('sample_rate')).toBe('16000');
      expect(f.deepgram.connections[0]!.query.get('language')).toBe(cfg.language);

      const c = await connect(node, cfg.session_id);
      await holdsATurn(c, 'book a table for two');
      expect(f.deepgram.connections.length).toBe(1);
      expect(f.deepgram.sessions[0]!.finals).toEqual(['book a table for two']);
      expect(f.cartesia.connections.length).toBe(1);
      expect(f.cartesia.generations.length).toBeGreaterThanOrEqual(2); // welcome + reply on the warm socket
      c.close();
      await c.closed();
      // Call over: the providers are closed, so the vendor sockets go too.
      await bounded(Promise.all([f.deepgram.connections[0]!.closed, f.cartesia.connections[0]!.closed]), 5000, 'vendor sockets to close at call end');
    });
  });

  it('a socket opening while the pre-warm handshake is still in flight adopts it too', { timeout: 30_000 }, async () => {
    await withFakes(async (f) => {
      // A slow vendor handshake (a TLS round trip to a distant region); the control plane does not
      // wait for the prewarm command before answering, so the caller may well be faster.
      f.deepgram.faults.always({ slowFirstByteMs: 300 });
      f.cartesia.faults.always({ slowFirstByteMs: 300 });
      const cfg = await putSession(node, f);
      const warming = prewarm(node, cfg.session_id);
      await waitUntil(() => f.deepgram.connections.length === 1 && f.cartesia.connections.length === 1, 5000, 'the pre-warm handshakes to start');
      const c = await connect(node, cfg.session_id);
      await holdsATurn(c, 'a table for two');
      expect(await warming).toEqual({ status: 'warm' });
      expect(f.deepgram.connections.length).toBe(1);
      expect(f.cartesia.connections.length).toBe(1);
      c.close();
      await c.closed();
    });
  });

  it('a prewarmed session that never connects has its warm sockets closed when the window expires', { timeout: 30_000 }, async () => {
    await withFakes(async (f) => {
      const cfg = await putSession(shortNode, f);
      const t0 = performance.now();
      expect(await prewarm(shortNode, cfg.session_id)).toEqual({ status: 'warm' });
      const [dg] = f.deepgram.connections;
      const [ca] = f.cartesia.connections;
      await bounded(Promise.all([dg!.closed, ca!.closed]), 5000, 'the warm sockets to close');
      expect(performance.now() - t0).toBeGreaterThanOrEqual(EXPIRY_MS - 20);
      // Closed by us (a clean 1000 close from the client side), not by the vendor's idle timeout.
      expect([dg!.closedByServer, dg!.closeCode]).toEqual([false, 1000]);
      expect([ca!.closedByServer, ca!.closeCode]).toEqual([false, 1000]);

      // The session is still connectable (30 s connect deadline): it just starts cold.
      const c = await connect(shortNode, cfg.session_id);
      await holdsATurn(c, 'hello there');
      expect(f.deepgram.connections.length).toBe(2);
      expect(f.cartesia.connections.length).toBe(2);
      c.close();
      await c.closed();
    });
  });

  it('a prewarm that arrives after its call started (and ended) warms nothing', { timeout: 30_000 }, async () => {
    await withFakes(async (f) => {
      const cfg = await putSession(node, f);
      const c = await connect(node, cfg.session_id);
      await c.waitForType('pipeline_ready', 5000);
      c.close();
      await c.closed();
      // The command read the session record before the call's end deleted it (it travels through
      // Redis while a fast client is already done): the record is still there when it runs.
      await putSession(node, f, { session_id: cfg.session_id });
      expect(await prewarm(node, cfg.session_id)).toEqual({ status: 'skipped' });
      // Only the call's own vendor connections; nothing held for the TTL or counted as load.
      expect(f.deepgram.connections.length).toBe(1);
      expect(f.cartesia.connections.length).toBe(1);
    });
  });
});
