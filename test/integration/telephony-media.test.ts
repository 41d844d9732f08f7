/**
 * The Twilio media transport end to end, engine only: the carrier simulator's media stream dials
 * into a real engine node (uWS, sim providers) and the caller speaks sim-coded audio through an
 * impaired link. Table-driven over the jitter-buffer scenarios (clean, jitter, reordering, 5 %
 * loss, bursts, late frames): every phrase must be understood (the sim LLM echoes it, the caller
 * hears the echo) and the turn record must carry the jitter counters that match the scenario.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import type { CallEndRecord, CallRecorder, TurnRecord } from '../../media-engine/session/recorder.js';
import type { TwilioTransportStats } from '../../media-engine/transports/twilio.js';
import { MediaStreamCall, type LinkOptions } from '../carrier-sim/index.js';
import { captureLogger } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';

interface Recorded {
  turns: TurnRecord[];
  end?: CallEndRecord;
}

let node: EngineNode;
let registry: MemoryRegistry;
const records = new Map<string, Recorded>();

beforeAll(async () => {
  registry = new MemoryRegistry();
  const config = loadConfig({}, { enginePort: 0, host: '127.0.0.1', engineCapacity: 20, maxSockets: 20 });
  node = await startEngineNode({
    config,
    logger: captureLogger('warn').logger,
    clock: realClock,
    registry,
    port: 0,
    providerFactory: () => ({ asr: createSimAsr(), llm: createSimLlm({ ttftMs: 20, tokensPerSecond: 400 }), tts: createSimTts({ ttfbMs: 10 }) }),
    recorderFactory: (c) => testRecorder(c.session_id),
  });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
});

function testRecorder(sessionId: string): CallRecorder {
  const r: Recorded = { turns: [] };
  records.set(sessionId, r);
  return { start: () => {}, turn: (t) => r.turns.push(t), end: (e) => (r.end = e) };
}

async function startCall(link: LinkOptions, overrides: Partial<SessionConfig> = {}, framesPerMessage = 1): Promise<{ media: MediaStreamCall; sessionId: string }> {
  const cfg = sessionConfig({ welcome_message: 'hello caller', silence_timeout_ms: 20_000, connection_type: 'twilio', ...overrides });
  await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
  const media = new MediaStreamCall({
    url: `ws://127.0.0.1:${node.port}/api/v1/voice/ws/twilio/CA0000000000000000000000000000beef`,
    callSid: 'CA0000000000000000000000000000beef',
    accountSid: 'AC00000000000000000000000000000001',
    customParameters: { session_id: cfg.session_id, agent_id: cfg.agent_id },
    link,
    framesPerMessage,
  });
  await media.connect();
  return { media, sessionId: cfg.session_id };
}

const PHRASES = ['my order number is four two seven', 'please send it to the office'];

const SCENARIOS: Array<{ name: string; link: LinkOptions; settleMs?: number; check: (s: TwilioTransportStats) => void }> = [
  // Timer jitter of the two event loops (and of a busy CI machine) can still starve a tick now
  // and then: concealed ticks stay under 3 % of the frames played; nothing arrives late or out
  // of order on a clean line.
  {
    name: 'clean line',
    link: {},
    check: (s) => expect([s.jitter.late, s.jitter.reordered, s.jitter.lost <= 0.03 * s.jitter.played], JSON.stringify(s.jitter)).toEqual([0, 0, true]),
  },
  { name: 'jitter 0-30 ms', link: { seed: 3, jitterMs: 30 }, check: (s) => expect(s.jitter.jitterMs).toBeGreaterThan(1) },
  { name: 'reordering 10 %', link: { seed: 4, reorderProb: 0.1, reorderDelayMs: 30 }, check: (s) => expect(s.jitter.reordered).toBeGreaterThan(5) },
  { name: '5 % loss', link: { seed: 5, lossProb: 0.05 }, check: (s) => expect(s.jitter.lost).toBeGreaterThan(5) },
  // A 100 ms stall while the agent greets: the held frames burst in and are all played (no
  // overflow, nothing late); only the stalled ticks are concealed, and the added latency is then
  // trimmed back to the target over the next seconds. The caller speaks once that settled: a
  // stall or a trim in the middle of a phrase shifts the sim code's timing grid and garbles it (a
  // limit of the test codec, see shared/providers/sim/NOTES.md, not of the buffer).
  {
    name: 'burst (100 ms stall, then everything at once)',
    link: { seed: 6, burst: { everyMs: 600_000, stallMs: 100, startMs: 400 } },
    settleMs: 6000,
    check: (s) => expect([s.jitter.overflow, s.jitter.late, s.jitter.lost >= 3, s.jitter.trimmed >= 1]).toEqual([0, 0, true, true]),
  },
  { name: 'late frames 2 % (+400 ms)', link: { seed: 7, lateProb: 0.02, lateDelayMs: 400 }, check: (s) => expect(s.jitter.late).toBeGreaterThan(0) },
];

describe('twilio media transport through an impaired link', () => {
  it.each(SCENARIOS)('$name: phrases understood, jitter counters on the turn record', { timeout: 60_000 }, async ({ name, link, settleMs, check }) => {
    const { media, sessionId } = await startCall(link);
    try {
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome heard');
      if (settleMs) await new Promise((r) => setTimeout(r, settleMs));
      for (const phrase of PHRASES) {
        const before = media.heard.length;
        await media.say(phrase);
        await media.waitUntil(() => media.heard.slice(before).includes(`you said: ${phrase}.`), 15_000, `echo of "${phrase}"`).catch((e: Error) => {
          const rec = records.get(sessionId);
          throw new Error(`${e.message}; engine understood ${JSON.stringify(rec?.turns.map((t) => t.user_text))}`);
        });
      }
      const rec = records.get(sessionId)!;
      await media.waitUntil(() => rec.turns.length >= PHRASES.length, 5000, 'turn records');
      expect(rec.turns.map((t) => t.user_text)).toEqual(PHRASES);
      const stats = (rec.turns.at(-1)!.metadata as { transport: TwilioTransportStats }).transport;
      check(stats);
      expect(stats.jitter.depthMs).toBeLessThanOrEqual(120);
      expect(stats.jitter.targetDepthMs).toBeGreaterThanOrEqual(20);
      expect(stats.marksHeard).toBeGreaterThan(0);
      expect(media.binaryReceived).toBe(0);
      if (process.env.TELEPHONY_REPORT) console.log(name, JSON.stringify({ link: media.link.stats, jitter: stats.jitter }));
    } finally {
      media.hangup();
      await media.closed();
    }
    await media.waitUntil(() => !node.calls.has(sessionId), 5000, 'call gone from the node');
    expect(records.get(sessionId)!.end?.reason).toBe('stream_stopped');
  });

  // Twilio: "Size is not promised". Before the reframer a 40 ms message lost its second half.
  it.each([2, 5])('%i x 20 ms per inbound media message: phrases understood, no invalid frame', { timeout: 60_000 }, async (frames) => {
    const { media, sessionId } = await startCall({ seed: 8, jitterMs: 10 }, {}, frames);
    try {
      await media.waitUntil(() => media.heard.includes('hello caller'), 10_000, 'welcome heard');
      for (const phrase of PHRASES) {
        const before = media.heard.length;
        await media.say(phrase);
        await media.waitUntil(() => media.heard.slice(before).includes(`you said: ${phrase}.`), 15_000, `echo of "${phrase}"`).catch((e: Error) => {
          throw new Error(`${e.message}; engine understood ${JSON.stringify(records.get(sessionId)?.turns.map((t) => t.user_text))}`);
        });
      }
      const rec = records.get(sessionId)!;
      await media.waitUntil(() => rec.turns.length >= PHRASES.length, 5000, 'turn records');
      expect(rec.turns.map((t) => t.user_text)).toEqual(PHRASES);
      const stats = (rec.turns.at(-1)!.metadata as { transport: TwilioTransportStats }).transport;
      expect([stats.invalidFrames, stats.mediaDroppedOutOfOrder]).toEqual([0, 0]);
    } finally {
      media.hangup();
      await media.closed();
    }
  });

  it('ignores binary frames and unknown events; refuses a start without a known session', { timeout: 20_000 }, async () => {
    const bad = new MediaStreamCall({
      url: `ws://127.0.0.1:${node.port}/api/v1/voice/ws/twilio/CAbad`,
      callSid: 'CAbad',
      accountSid: 'AC1',
      customParameters: { session_id: 'no-such-session', agent_id: 'x' },
    });
    await bad.connect();
    const code = await bad.closed();
    expect(code).toBe(1008);
  });
});
