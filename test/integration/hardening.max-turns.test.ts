/**
 * Issue 11 on a real engine node (uWS on port 0, sessions in the real Redis): finding "`max_turns`
 * bypass" (100 `text_inject` frames in a burst on a call capped at 50 gave 101 turns and 101 LLM
 * requests), the per-call rate limit of injected text on both paths (socket frames and the `/text`
 * command routed through the registry), and the injected-text length bound on the socket path.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createClient } from 'redis';
import { realClock } from '../../shared/clock.js';
import { loadConfig } from '../../shared/config.js';
import { RedisRegistry } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { startEngineNode, type EngineNode } from '../../media-engine/node.js';
import { createSimAsr } from '../../shared/providers/asr/sim.js';
import { createSimLlm, type SimLlmProvider } from '../../shared/providers/llm/sim.js';
import { createSimTts } from '../../shared/providers/tts/sim.js';
import { INJECT_TEXT_MAX_CHARS } from '../../media-engine/session/limits.js';
import { captureLogger, TEST_REDIS_URL, uniqueName } from '../helpers/infra.js';
import { sessionConfig } from '../helpers/session-config.js';
import { VoiceClient } from '../helpers/voice-client.js';

let node: EngineNode;
let registry: RedisRegistry;
const prefix = uniqueName('vpt');
/** The sim LLM of each call, by session id: tests count its requests. */
const llms = new Map<string, SimLlmProvider>();

beforeAll(async () => {
  registry = await RedisRegistry.connect({ url: TEST_REDIS_URL, prefix });
  node = await startEngineNode({
    config: loadConfig({}, { enginePort: 0, host: '127.0.0.1' }),
    logger: captureLogger().logger,
    clock: realClock,
    registry,
    port: 0,
    providerFactory: (c) => {
      // Short fixed answers to the burst tests: injected texts that interrupt an answer the caller
      // has not heard yet join the next turn (CallerSpeech.inject), so an echo would grow per turn.
      const llm = createSimLlm({ script: { rules: [{ when: 'message', reply: 'Noted.' }] } });
      llms.set(c.session_id, llm);
      return { asr: createSimAsr(), llm, tts: createSimTts() };
    },
  });
});

afterAll(async () => {
  await node?.close();
  await registry?.close();
  const redis = createClient({ url: TEST_REDIS_URL });
  await redis.connect();
  for await (const keys of redis.scanIterator({ MATCH: `${prefix}*`, COUNT: 500 })) if (keys.length) await redis.del(keys);
  await redis.quit();
});

/** Stores a session for this node and opens its socket (no caller audio: text only). */
async function call(overrides: Partial<SessionConfig>): Promise<{ c: VoiceClient; sc: SessionConfig }> {
  const sc = sessionConfig({ welcome_message: '', silence_timeout_ms: 60_000, ...overrides });
  const now = Date.now();
  await registry.sessions.putSession({ sessionId: sc.session_id, agentId: sc.agent_id, nodeId: node.nodeId, config: sc, createdAtMs: now, connectDeadlineMs: now + 30_000 });
  const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${sc.session_id}`, { sendAudio: false });
  await c.waitForType('pipeline_ready', 5000);
  return { c, sc };
}

const errorsWith = (c: VoiceClient, code: string) => c.events.filter((e) => e.type === 'error' && e.code === code);

describe('`max_turns` bypass', () => {
  it('100 text_inject frames in a burst, cap 50: at most 50 LLM requests, then call_ended max_turns', { timeout: 30_000 }, async () => {
    // The rate limit is opened wide for this session so the cap alone is under test.
    const { c, sc } = await call({ max_turns: 50, call_limits: { inject_burst: 1000 } });
    for (let i = 1; i <= 100; i++) c.sendJson({ type: 'text_inject', text: `message ${i}`, role: 'user' });

    const ended = await c.waitForType('call_ended', 25_000);
    expect(ended.reason).toBe('max_turns');
    await c.closed();
    expect(llms.get(sc.session_id)!.requestCount).toBeLessThanOrEqual(50);
    const turns = c.events.filter((e) => e.type === 'transcription').map((e) => e.turn as number);
    expect(turns).toHaveLength(50);
    expect(Math.max(...turns)).toBe(50);
    expect(errorsWith(c, 'CONFLICT')).toHaveLength(50);
    // The 50th answer was spoken to the end before the call ended.
    const last = c.events.filter((e) => e.type === 'turn_complete').at(-1)!;
    expect(last).toMatchObject({ turn: 50, assistant_text: 'Noted.' });
    // No accepted text is lost: the last turn ends with the 50th message.
    expect(last.user_text as string).toMatch(/(^| )message 50$/);
  });
});

describe('injected text rate limit', () => {
  it('socket frames: a burst of 20 lets the default 5 through, the rest get a non-fatal RATE_LIMITED error frame', { timeout: 20_000 }, async () => {
    const { c, sc } = await call({ max_turns: 0 });
    for (let i = 1; i <= 20; i++) c.sendJson({ type: 'text_inject', text: `burst ${i}`, role: 'user' });
    await c.waitFor(() => errorsWith(c, 'RATE_LIMITED').length === 15, 5000);
    expect(c.events.filter((e) => e.type === 'error').every((e) => e.fatal === false)).toBe(true);
    // The last accepted text is answered: the call goes on.
    // (Earlier burst texts whose answers were not heard yet join it: see CallerSpeech.inject.)
    await c.waitFor((e) => e.type === 'turn_complete' && /(^| )burst 5$/.test(e.user_text as string), 10_000);
    expect(c.events.filter((e) => e.type === 'transcription')).toHaveLength(5);
    expect(llms.get(sc.session_id)!.requestCount).toBeLessThanOrEqual(5);
    expect(c.types()).not.toContain('call_ended');
    c.close();
    await c.closed();
  });

  it('the /text command routed through the registry spends the same budget', { timeout: 20_000 }, async () => {
    const { c, sc } = await call({ max_turns: 0 });
    // The owner answers each command with the actor's verdict: the control plane turns a refusal into 429.
    const replies: string[] = [];
    for (let i = 1; i <= 8; i++) {
      replies.push(
        await registry.commands
          .sendCommand(node.nodeId, { kind: 'text', sessionId: sc.session_id, payload: { text: `routed ${i}`, role: 'user' } }, 2000)
          .then(() => 'ok', (err: { code?: string }) => err.code ?? 'error'),
      );
    }
    expect(replies).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'RATE_LIMITED', 'RATE_LIMITED', 'RATE_LIMITED']);
    await c.waitFor(() => errorsWith(c, 'RATE_LIMITED').length === 3, 5000);
    // Each accepted text ends a turn's text (earlier ones not answered audibly yet join it).
    const texts = c.events.filter((e) => e.type === 'transcription').map((e) => e.text as string);
    expect(texts.map((t) => t.split(' ').slice(-2).join(' '))).toEqual(['routed 1', 'routed 2', 'routed 3', 'routed 4', 'routed 5']);
    expect(llms.get(sc.session_id)!.requestCount).toBeLessThanOrEqual(5);
    c.close();
    await c.closed();
  });
});

describe('injected text length', () => {
  it(`a text_inject frame longer than ${INJECT_TEXT_MAX_CHARS} characters is refused as the HTTP text route refuses it, and never reaches the model`, { timeout: 20_000 }, async () => {
    const { c } = await call({ max_turns: 0 });
    c.sendJson({ type: 'text_inject', text: 'z'.repeat(INJECT_TEXT_MAX_CHARS + 1000), role: 'user' });
    const e = await c.waitForType('error', 5000);
    expect(e).toMatchObject({ code: 'INVALID_REQUEST', fatal: false });
    expect(String(e.message)).toContain(`at most ${INJECT_TEXT_MAX_CHARS} characters`);
    // The call goes on: a text within the bound is answered.
    c.sendJson({ type: 'text_inject', text: 'z'.repeat(INJECT_TEXT_MAX_CHARS), role: 'user' });
    const t = await c.waitForType('transcription', 5000);
    expect((t.text as string).length).toBe(INJECT_TEXT_MAX_CHARS);
    c.close();
    await c.closed();
  });
});
