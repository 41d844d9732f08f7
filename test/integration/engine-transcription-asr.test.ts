/**
 * The OpenAI-compatible transcription ASR on a real call: a browser caller speaks (sim-coded audio,
 * so the fake server can "transcribe" it), the engine's VAD and silence endpoint cut the utterance,
 * the adapter uploads it as one WAV to a local fake `/v1/audio/transcriptions`, and the text
 * becomes the turn the agent answers. The node builds the providers itself from the session
 * (provider `openai_compatible` with the fake's `base_url`), through the outbound policy.
 *
 * Real-time audio (20 ms schedules): in REALTIME (vitest.config.ts).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../shared/config.js';
import { realClock } from '../../shared/clock.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { OpenAiFake } from '../fakes/openai.js';
import { captureLogger } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';

let node: EngineNode;
let registry: MemoryRegistry;
const fake = new OpenAiFake({ apiKey: 'whisper-key' });

beforeAll(async () => {
  await fake.start();
  registry = new MemoryRegistry();
  const config = loadConfig({ OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 4, maxSockets: 8 });
  node = await startEngineNode({ config, logger: captureLogger('warn').logger, clock: realClock, registry, port: 0 });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
  await fake.close();
});

describe('transcription ASR on a call', () => {
  it('the caller speaks, the utterance is uploaded once at the endpoint, the agent answers its text', { timeout: 40_000 }, async () => {
    const cfg = sessionConfig({
      silence_timeout_ms: 60_000,
      providers: {
        asr: { provider_name: 'openai_compatible', base_url: `${fake.url}/v1`, api_key: 'whisper-key', model_name: 'Systran/faster-whisper-small' },
        llm: { provider_name: 'sim' },
        tts: { provider_name: 'sim' },
      },
    });
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}?profile=browser_headset`);
    try {
      await c.waitForType('pipeline_ready');
      await new Promise((r) => setTimeout(r, 1000)); // silence first: never uploaded
      expect(fake.uploads).toHaveLength(0);
      await c.say('what time do you open');
      const tr = await c.waitForType('transcription', 15_000);
      expect(tr).toMatchObject({ text: 'what time do you open', turn: 1 });
      expect(tr.speech_duration_ms).toBeGreaterThan(1000);
      await c.waitForType('turn_complete', 15_000);
      expect(c.heard).toContain('you said: what time do you open.');
      expect(fake.uploads).toHaveLength(1);
      expect(fake.uploads[0]).toMatchObject({ sampleRateHz: 16000, fields: { model: 'Systran/faster-whisper-small', response_format: 'json', language: 'en' } });
      // The pre-roll bound: the upload is the phrase (~2.6 s) plus endpoint silence, not the second of silence before it.
      expect(fake.uploads[0]!.samples / 16000).toBeLessThan(4.5);
      expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer whisper-key');
    } finally {
      c.close();
      await c.closed();
    }
  });
});
