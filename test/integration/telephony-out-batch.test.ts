/**
 * CARRIER_OUT_MESSAGE_MS=40 end to end (issue 13): an engine node sending two 20 ms frames per
 * Twilio `media` message to the carrier simulator, which plays any payload length as Twilio does.
 * The caller hears the welcome and the answer whole, marks are echoed, and every message but the
 * last of an utterance (sent before its mark) carries 40 ms.
 *
 * Real-time audio (20 ms schedules): in REALTIME (vitest.config.ts, `telephony-*`).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { EngineNode } from '../../media-engine/node.js';
import type { CallRecorder, TurnRecord } from '../../media-engine/session/recorder.js';
import type { TwilioTransportStats } from '../../media-engine/transports/twilio.js';
import { MediaStreamCall } from '../carrier-sim/index.js';
import { captureLogger } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { startSimEngine } from '../helpers/sim-engine.js';

let node: EngineNode;
let registry: MemoryRegistry;
const turns = new Map<string, TurnRecord[]>();

beforeAll(async () => {
  registry = new MemoryRegistry();
  const config = loadConfig({ CARRIER_OUT_MESSAGE_MS: '40' }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 4, maxSockets: 8 });
  node = await startSimEngine({
    config,
    logger: captureLogger('warn').logger,
    registry,
    llm: { ttftMs: 20, tokensPerSecond: 400 },
    tts: { ttfbMs: 10 },
    recorderFactory: (c): CallRecorder => {
      const list: TurnRecord[] = [];
      turns.set(c.session_id, list);
      return { start: () => {}, turn: (t) => list.push(t), end: () => {} };
    },
  });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
});

describe('two frames per carrier media message (CARRIER_OUT_MESSAGE_MS=40)', () => {
  it('the caller hears the welcome and the answer whole; messages carry 40 ms; marks are echoed', { timeout: 30_000 }, async () => {
    const cfg = sessionConfig({ welcome_message: 'hello caller', silence_timeout_ms: 20_000, connection_type: 'twilio' });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const media = new MediaStreamCall({
      url: `ws://127.0.0.1:${node.port}/api/v1/voice/ws/twilio/CA00000000000000000000000000000040`,
      callSid: 'CA00000000000000000000000000000040',
      accountSid: 'AC00000000000000000000000000000001',
      customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id },
    });
    await media.connect();
    try {
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome heard');
      await media.say('please book a table for two');
      await media.waitUntil(() => media.heard.includes('you said: please book a table for two.'), 15_000, 'the answer heard');
      const list = turns.get(cfg.session_id)!;
      await media.waitUntil(() => list.length >= 1, 5000, 'turn record');
      const stats = (list.at(-1)!.metadata as { transport: TwilioTransportStats }).transport;
      expect(stats.marksHeard).toBeGreaterThan(0);
      const sizes = media.mediaArrivals.map(([, bytes]) => bytes);
      // 320 bytes (40 ms) each; a 160-byte message only as the last one of an utterance, before its mark.
      expect(sizes.filter((n) => n !== 320 && n !== 160)).toEqual([]);
      expect(sizes.filter((n) => n === 160).length).toBeLessThanOrEqual(stats.marksSent);
      expect(sizes.filter((n) => n === 320).length).toBeGreaterThan(20);
      expect(stats.outFrames).toBe(sizes.reduce((n, b) => n + b / 160, 0));
      expect(media.binaryReceived).toBe(0);
    } finally {
      media.hangup();
      await media.closed();
    }
  });
});
