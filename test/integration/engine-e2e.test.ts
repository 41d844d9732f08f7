/**
 * The engine's end-to-end scenario: a simulated browser caller speaking `sim`-coded audio in real
 * time holds a multi-turn conversation with a tool call against a local HTTP server, a barge-in in
 * the middle of a long answer, a false barge-in (noise, no words), and idle nudges up to
 * `idle_disconnect`. Asserts the event sequence and fields.
 */
import http from 'node:http';
import fs from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { EngineNode } from '../../media-engine/node.js';
import { startSimEngine } from '../helpers/sim-engine.js';
import { simDemoScript } from '../../shared/providers/llm/sim.js';
import { parseWav, pcm16FromBytes } from '../helpers/wav.js';
import { captureLogger, TEST_OUTBOUND_ALLOW_CIDRS } from '../helpers/infra.js';
import { VoiceClient } from '../helpers/voice-client.js';
import { sessionConfig, weatherTool } from '../helpers/session-config.js';

let node: EngineNode;
let registry: MemoryRegistry;
let toolServer: http.Server;
let toolUrl = '';
const toolRequests: unknown[] = [];

beforeAll(async () => {
  toolServer = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      toolRequests.push({ url: req.url, body: body ? JSON.parse(body) : undefined, auth: req.headers.authorization });
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ forecast: { summary: 'sunny and mild' } }));
    });
  });
  await new Promise<void>((r) => toolServer.listen(0, '127.0.0.1', r));
  toolUrl = `http://127.0.0.1:${(toolServer.address() as { port: number }).port}/weather`;
  registry = new MemoryRegistry();
  const config = loadConfig({ OUTBOUND_ALLOW_CIDRS: TEST_OUTBOUND_ALLOW_CIDRS }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 10, maxSockets: 10 });
  node = await startSimEngine({
    config,
    logger: captureLogger().logger,
    registry,
    llm: {
      ttftMs: 30,
      tokensPerSecond: 200,
      script: {
        rules: [
          { when: 'again', reply: 'Of course. We open at noon, we close at eleven, and the terrace opens in good weather.' },
          { when: 'weather', toolCalls: [{ name: 'get_weather', arguments: { city: 'Paris' } }], afterTool: 'It is {{result}} today.' },
          ...simDemoScript.rules.filter((r) => r.when !== 'weather'),
        ],
      },
    },
    tts: { ttfbMs: 20 },
  });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
  await new Promise((r) => toolServer?.close(r));
});

async function startSession(overrides: Partial<SessionConfig> = {}): Promise<string> {
  const cfg = sessionConfig({
    welcome_message: 'hi there',
    silence_timeout_ms: 1500,
    idle_max_attempts: 2,
    tools: [weatherTool(toolUrl)],
    ...overrides,
  });
  await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
  return cfg.session_id;
}

describe('engine end to end (browser, sim providers)', () => {
  it('holds a conversation: tool call, barge-in, false barge-in, idle nudges', { timeout: 90_000 }, async () => {
    const sessionId = await startSession();
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sessionId}?profile=browser_headset`);
    try {
      const ready = await c.waitForType('pipeline_ready');
      expect(c.events[0].type).toBe('pipeline_ready');
      expect(ready.providers).toEqual({ asr: 'sim', llm: 'sim', tts: 'sim' });
      expect(ready.audioFramesBefore).toBe(0);
      expect(typeof ready.server_ts).toBe('number');

      // Welcome is spoken first and heard by the caller.
      await waitUntil(() => c.heard.includes('hi there'), 10_000);

      // Turn 1: a tool call against the local HTTP server.
      let from = c.events.length;
      await c.say('what is the weather like');
      const tr1 = await c.waitFor((e) => e.type === 'transcription' && e.turn === 1, 10_000, from);
      expect(tr1.text).toBe('what is the weather like');
      expect(tr1.speech_duration_ms).toBeGreaterThan(500);
      const started = await c.waitFor((e) => e.type === 'tool_calls_started' && e.turn === 1, 10_000, from);
      expect(started).toMatchObject({ step: 1, parallel: false, tools: [{ name: 'get_weather', arguments: { city: 'Paris' } }] });
      const result = await c.waitFor((e) => e.type === 'tool_call_result' && e.turn === 1, 10_000, from);
      expect(result).toMatchObject({ tool_name: 'get_weather', result: 'sunny and mild', step: 1 });
      expect(toolRequests.at(-1)).toMatchObject({ body: { city: 'Paris' }, auth: 'Bearer tool-secret-token' });
      const tc1 = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 1, 20_000, from);
      expect(tc1.assistant_text).toBe('It is sunny and mild today.');
      const timing = tc1.timing as Record<string, number>;
      expect(timing.total_ms).toBeGreaterThan(0);
      expect(timing.internal_overhead_ms).toBeGreaterThanOrEqual(0);
      expect(timing.internal_overhead_ms).toBeLessThanOrEqual(timing.total_ms);
      const order1 = c.events.slice(from).map((e) => e.type).filter((t) => t !== 'llm_chunk' && t !== 'interim_transcription');
      expect(order1).toEqual(
        expect.arrayContaining(['user_started_speaking', 'transcription', 'llm_start', 'tool_calls_started', 'tool_call_in_progress', 'tool_call_result', 'llm_step_start', 'llm_end', 'tts_audio_start', 'tts_complete', 'turn_complete']),
      );
      expect(order1.indexOf('transcription')).toBeLessThan(order1.indexOf('llm_start'));
      expect(order1.indexOf('tool_call_result')).toBeLessThan(order1.indexOf('llm_step_start'));
      expect(order1.indexOf('tts_audio_start')).toBeLessThan(order1.indexOf('turn_complete'));
      await waitUntil(() => c.heard.includes('it is sunny and mild today.'), 10_000).catch((e) => {
        throw new Error(`${e.message}: heard ${JSON.stringify(c.heard)}`);
      });

      // Turn 2: a long answer, interrupted by real speech.
      from = c.events.length;
      await c.say('give me the long version');
      await c.waitFor((e) => e.type === 'tts_audio_start' && e.turn === 2, 10_000, from);
      await sleep(2500);
      const bargeFrom = c.events.length;
      void c.say('stop');
      const interim = await c.waitFor((e) => e.type === 'interim_transcription', 10_000, bargeFrom);
      // Audio stops within 2 frames of the confirming event: count the interrupted turn's frames
      // that reached the caller after it (until the next reply starts).
      const nextAudio = await c.waitFor((e) => e.type === 'tts_audio_start' && e.turn === 3, 10_000, bargeFrom);
      expect(nextAudio.audioFramesBefore - interim.audioFramesBefore).toBeLessThanOrEqual(2);
      const tc2 = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 2, 10_000, from);
      expect((tc2.timing as { interrupted: boolean }).interrupted).toBe(true);
      const full = simDemoScript.rules.find((r) => r.when === 'long')!.reply!;
      expect((tc2.assistant_text as string).length).toBeGreaterThan(0);
      expect((tc2.assistant_text as string).length).toBeLessThan(full.length / 2);
      expect(full.startsWith(tc2.assistant_text as string)).toBe(true);
      const tr3 = await c.waitFor((e) => e.type === 'transcription' && e.turn === 3, 10_000, bargeFrom);
      expect(tr3.text).toBe('stop');
      await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 3, 15_000, bargeFrom);

      // False barge-in: a noise burst during a long answer, no words -> phase_idle, agent keeps talking.
      from = c.events.length;
      await c.say('again please');
      await c.waitFor((e) => e.type === 'tts_audio_start' && e.turn === 4, 10_000, from);
      await sleep(500);
      const noiseFrom = c.events.length;
      c.play(loadFixture('noise-burst.16k.wav'));
      await c.waitFor((e) => e.type === 'user_started_speaking', 5000, noiseFrom);
      await c.waitFor((e) => e.type === 'phase_idle', 5000, noiseFrom);
      const framesBefore = c.audioFrames;
      await sleep(300);
      expect(c.audioFrames).toBeGreaterThan(framesBefore);
      const tc4 = await c.waitFor((e) => e.type === 'turn_complete' && e.turn === 4, 30_000, from);
      expect((tc4.timing as { interrupted: boolean }).interrupted).toBe(false);

      // Idle nudges until disconnect (the client acknowledges playback each time).
      c.sendJson({ type: 'playback_done' });
      const n1 = await c.waitFor((e) => e.type === 'idle_check', 10_000, from);
      expect(n1).toMatchObject({ attempt: 1, max_attempts: 2 });
      const n2 = await c.waitFor((e) => e.type === 'idle_check' && e.attempt === 2, 10_000, from);
      expect(n2.max_attempts).toBe(2);
      const disc = await c.waitFor((e) => e.type === 'idle_disconnect', 10_000, from);
      expect(disc).toMatchObject({ reason: 'no_response', total_attempts: 2 });
      const ended = await c.waitFor((e) => e.type === 'call_ended', 15_000, from);
      expect(ended.reason).toBe('idle_timeout');
      await c.closed();
      expect(node.calls.has(sessionId)).toBe(false);
    } finally {
      c.close();
    }
  });
});

function loadFixture(name: string): Int16Array {
  const wav = parseWav(new Uint8Array(fs.readFileSync(path.resolve(import.meta.dirname, '../fixtures/audio', name))));
  return pcm16FromBytes(wav.data);
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function waitUntil(pred: () => boolean, timeoutMs: number): Promise<void> {
  const end = Date.now() + timeoutMs;
  while (!pred()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await sleep(20);
  }
}
