/**
 * How a browser socket becomes a call: the WebSocket handshake completes at once (synchronous
 * upgrade) and the session is claimed on the open socket. The asynchronous upgrade of our
 * uWebSockets.js build could shut a fresh socket down right after `open` (1006, no close frame:
 * uNetworking/uWebSockets PR #1929), seen as about 1 in 20-60 sockets opened back to back against
 * a freshly started engine process; the last case here is that scenario on a real engine process.
 */
import fs from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { ClaimResult } from '../../shared/registry/types.js';
import type { EngineNode } from '../../media-engine/node.js';
import { buildChild } from '../helpers/child-build.js';
import { startEngineChild, type EngineChild } from '../helpers/engine-child.js';
import { captureLogger, startTestInfra, TEST_REDIS_URL, type TestInfra } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { until } from '../helpers/campaigns.js';
import { VoiceClient } from '../helpers/voice-client.js';

const START_TIMEOUT_MS = 400;

describe('browser socket connect (in-process engine, claims held back by the test)', () => {
  let registry: MemoryRegistry;
  let node: EngineNode;
  /** While set, claims wait for this promise before they reach the registry. */
  let holdClaims: Promise<void> | undefined;
  let claimsStarted = 0;

  beforeAll(async () => {
    registry = new MemoryRegistry();
    const claim = registry.sessions.claimSession.bind(registry.sessions);
    registry.sessions.claimSession = async (...args): Promise<ClaimResult> => {
      claimsStarted++;
      if (holdClaims) await holdClaims;
      return claim(...args);
    };
    const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 20, socketStartTimeoutMs: START_TIMEOUT_MS });
    node = await startSimEngine({ config, logger: captureLogger().logger, registry });
  });

  afterAll(async () => {
    await node?.close();
    await registry?.close();
  });

  async function session(): Promise<string> {
    const cfg = sessionConfig({ welcome_message: 'hi there' });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    return cfg.session_id;
  }

  const url = (sessionId: string) => `ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sessionId}`;

  it('completes the handshake before the claim, then starts the call when the claim lands', async () => {
    const id = await session();
    let release!: () => void;
    holdClaims = new Promise((r) => (release = r));
    const before = claimsStarted;
    const c = await VoiceClient.connect(url(id), { sendAudio: false });
    try {
      // Open while the claim is still held: nothing sent yet, the session not yet ours.
      await until(() => claimsStarted > before, 5_000, 'claim started');
      expect(c.events).toHaveLength(0);
      expect(await registry.sessions.sessionOwner(id)).toBeUndefined();
      release();
      holdClaims = undefined;
      const ready = await c.waitForType('pipeline_ready', 5_000);
      expect(ready.providers).toEqual({ asr: 'sim', llm: 'sim', tts: 'sim' });
      expect(await registry.sessions.sessionOwner(id)).toBe(node.nodeId);
    } finally {
      c.close();
    }
  });

  it('a claim slower than SOCKET_START_TIMEOUT_MS ends the socket with an error frame and 1013; the late claim is given back', async () => {
    const id = await session();
    let release!: () => void;
    holdClaims = new Promise((r) => (release = r));
    const c = await VoiceClient.connect(url(id), { sendAudio: false });
    const code = await c.closed(5_000);
    expect(code).toBe(1013);
    expect(c.events.map((e) => [e.type, e.fatal])).toEqual([['error', true]]);
    expect(String(c.events[0].message)).toMatch(/claim timed out/);
    release();
    holdClaims = undefined;
    // The claim lands after the socket is gone: the session must not stay claimed by this node.
    await until(async () => (await registry.sessions.getSession(id)) === undefined, 5_000, 'session given back');
  });

  it('a socket that closes while its session is being claimed gives the session back', async () => {
    const id = await session();
    let release!: () => void;
    holdClaims = new Promise((r) => (release = r));
    const before = claimsStarted;
    const c = await VoiceClient.connect(url(id), { sendAudio: false });
    await until(() => claimsStarted > before, 5_000, 'claim started');
    c.close();
    await c.closed(5_000);
    release();
    holdClaims = undefined;
    await until(async () => (await registry.sessions.getSession(id)) === undefined, 5_000, 'session given back');
    expect(node.calls.size).toBe(0);
  });

  it('an unknown session gets the spec error frame on the open socket', async () => {
    const c = await VoiceClient.connect(url('no-such-session-0000000000'), { sendAudio: false });
    expect(await c.closed(5_000)).toBe(1008);
    expect(c.events[0]).toMatchObject({ type: 'error', fatal: true, message: 'session not found, start a session first' });
  });
});

describe('browser sockets opened back to back against a fresh engine process', () => {
  let infra: TestInfra;
  let dir = '';
  let engine: EngineChild | undefined;
  const clients: VoiceClient[] = [];

  beforeAll(async () => {
    infra = await startTestInfra();
    dir = buildChild([]);
    engine = await startEngineChild({ dir, schema: infra.schema, registryPrefix: infra.registryPrefix, redisUrl: TEST_REDIS_URL, env: { ENGINE_CAPACITY: '200', MAX_SOCKETS_PER_IP: '500' } });
  }, 60_000);

  afterAll(async () => {
    for (const c of clients) c.close();
    if (engine && engine.proc.exitCode === null && engine.proc.signalCode === null) engine.proc.kill('SIGKILL');
    await infra?.close();
    if (dir) fs.rmSync(dir, { recursive: true, force: true });
  });

  it('every one of 80 sockets reaches pipeline_ready and stays open', { timeout: 90_000 }, async () => {
    const node = engine!;
    for (let i = 0; i < 80; i++) {
      const cfg = sessionConfig({ welcome_message: 'Hello there! How can I help you today?' });
      await infra.registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 60_000 });
      const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`, { sendAudio: false });
      clients.push(c);
      await c.waitForType('pipeline_ready', 10_000);
    }
    // The drop happened within milliseconds of `pipeline_ready`; the welcome of the last call
    // being heard means every earlier socket had far longer than that to fail.
    const last = clients[clients.length - 1];
    await last.waitForType('tts_complete', 15_000);
    const dropped = clients.map((c, i) => [i, c.closeCode] as const).filter(([, code]) => code !== undefined);
    expect(dropped).toEqual([]);
  });
});
