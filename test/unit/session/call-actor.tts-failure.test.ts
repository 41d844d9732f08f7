/**
 * A TTS that fails is explained, not silent: a refused request (a revoked key: not retryable) and a
 * stream cut mid-sentence each give a non-fatal `error` event (`tts_failed`) and a log line; the
 * call goes on. Before, both were dropped without a word: a mute agent with no diagnostics. And an
 * ASR that gives up says so once on the socket (it left the caller unheard without a word).
 */
import { describe, expect, it } from 'vitest';
import { ProviderError } from '../../../shared/providers/errors.js';
import type { LlmEvent, LlmProvider, PcmChunk, TtsProvider, TtsRequest } from '../../../shared/providers/types.js';
import { actorHarness } from './actor-harness.js';

function failing(sim: TtsProvider, mode: 'refused' | 'cut'): TtsProvider {
  return {
    ...sim,
    synthesize(req: TtsRequest): AsyncIterable<PcmChunk> {
      return (async function* () {
        if (mode === 'refused') throw new ProviderError({ provider: 'elevenlabs', code: 'AUTH_FAILED', message: 'elevenlabs: HTTP 401: Unauthorized' });
        let n = 0;
        for await (const chunk of sim.synthesize(req)) {
          yield chunk;
          if (++n === 2) throw new ProviderError({ provider: 'openai', code: 'VENDOR_ERROR', message: 'openai: stream ended early' });
        }
      })();
    },
  };
}

describe('CallActor when the TTS fails', () => {
  it.each(['refused', 'cut'] as const)('%s: a non-fatal tts_failed error and a log line; the next turn is answered', async (mode) => {
    const h = actorHarness({}, { wrapTts: (sim) => failing(sim, mode) });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'hello there', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);
    const errors = h.transport.of('error');
    expect(errors).toHaveLength(1);
    expect(errors[0]).toMatchObject({ code: 'tts_failed', fatal: false });
    expect(String(errors[0]!.message)).toContain(mode === 'refused' ? 'speech synthesis failed: elevenlabs: HTTP 401' : 'stopped mid-sentence');
    expect(h.logLines.some((l) => l.includes('"tts failed"') && l.includes(mode === 'refused' ? 'AUTH_FAILED' : 'VENDOR_ERROR'))).toBe(true);
    h.actor.post({ kind: 'text_inject', text: 'still there?', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 2)).toBe(true);
    expect(h.actor.phase).toBe('listening');
  });
});

const KEY = 'sk-live-SECRET-0123456789abcdef';
const KEYED = { providers: { asr: { provider_name: 'sim', api_key: KEY }, llm: { provider_name: 'sim' }, tts: { provider_name: 'sim', api_key: KEY } } };

describe('vendor error text that echoes the key', () => {
  it('TTS: the error event, its provider code and the log line carry no key', async () => {
    const echoing: (sim: TtsProvider) => TtsProvider = (sim) => ({
      ...sim,
      synthesize: () =>
        (async function* (): AsyncGenerator<PcmChunk> {
          throw new ProviderError({ provider: 'elevenlabs', code: 'AUTH_FAILED', message: `elevenlabs: HTTP 401: Invalid API key: ${KEY}` });
        })(),
    });
    const h = actorHarness(KEYED, { wrapTts: echoing });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'hello there', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);
    const [err] = h.transport.of('error');
    expect(err).toMatchObject({ code: 'tts_failed', provider_code: 'AUTH_FAILED', partial: false, message: 'speech synthesis failed: elevenlabs: HTTP 401: Invalid API key: [redacted]' });
    expect(h.logLines.join('\n')).not.toContain(KEY);
    expect(JSON.stringify(h.recorder)).not.toContain(KEY);
  });

  it('ASR: a recoverable error is not told as the cause of a later end of the stream', async () => {
    const h = actorHarness(KEYED);
    h.actor.start();
    h.actor.post({ kind: 'asr', event: { type: 'error', message: 'transcription backlog, catching up', recoverable: true } });
    h.actor.post({ kind: 'asr_closed' });
    await h.silence(40);
    expect(h.transport.of('error')).toMatchObject([{ code: 'asr_unavailable', message: 'speech recognition stopped for the rest of this call (the stream ended); type instead' }]);
  });

  it('ASR: asr_unavailable names the cause it gave up on, redacted', async () => {
    const h = actorHarness(KEYED);
    h.actor.start();
    h.actor.post({ kind: 'asr', event: { type: 'error', message: `deepgram: HTTP 401: bad key ${KEY}; giving up`, recoverable: false } });
    h.actor.post({ kind: 'asr_closed' });
    await h.silence(40);
    expect(h.transport.of('error')).toMatchObject([{ code: 'asr_unavailable', message: 'speech recognition stopped for the rest of this call: deepgram: HTTP 401: bad key [redacted]; giving up; type instead' }]);
    expect(h.logLines.join('\n')).not.toContain(KEY);
  });
});

describe('CallActor when the ASR gives up', () => {
  it('the ASR stream ending mid-call gives one non-fatal asr_unavailable error and a log line; typed text is still answered', async () => {
    const h = actorHarness();
    h.actor.start();
    h.actor.post({ kind: 'asr', event: { type: 'error', message: 'deepgram: connect failed: deepgram: HTTP 401: Unauthorized; giving up', recoverable: false } });
    await h.silence(40);
    expect(h.transport.of('error')).toEqual([]);
    h.actor.post({ kind: 'asr_closed' });
    await h.silence(40);
    expect(h.transport.of('error')).toMatchObject([{ code: 'asr_unavailable', fatal: false }]);
    expect(h.logLines.some((l) => l.includes('asr ended mid-call'))).toBe(true);
    h.actor.post({ kind: 'text_inject', text: 'typed instead', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);
  });
});

describe('CallActor when the LLM fails', () => {
  it('an llm_error event and a log line with the provider code; the next turn is answered', async () => {
    let fail = true;
    const h = actorHarness({}, {
      wrapLlm: (sim) => ({
        ...sim,
        stream: (req) =>
          fail
            ? (async function* () {
                fail = false;
                throw new ProviderError({ provider: 'openai', code: 'AUTH_FAILED', message: 'openai: HTTP 401: Incorrect API key' });
              })()
            : sim.stream(req),
      }),
    });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'hello there', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('llm_error').length === 1)).toBe(true);
    expect(h.logLines.some((l) => l.includes('"llm failed"') && l.includes('AUTH_FAILED') && l.includes('Incorrect API key'))).toBe(true);
    h.actor.post({ kind: 'text_inject', text: 'still there?', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('llm_end').length === 1)).toBe(true);
  });
});

describe('an LLM that fails mid-answer', () => {
  it('the turn timing counts the step whose text was spoken (it read zero with no steps)', async () => {
    let h!: ReturnType<typeof actorHarness>;
    const cutting = (llm: LlmProvider): LlmProvider => ({
      ...llm,
      stream: () =>
        (async function* (): AsyncGenerator<LlmEvent> {
          await new Promise<void>((r) => h.clock.setTimeout(r, 300));
          yield { type: 'text', delta: 'Sure, the first part is here. ' };
          await new Promise<void>((r) => h.clock.setTimeout(r, 200));
          throw new ProviderError({ provider: 'openai', code: 'STREAM_INTERRUPTED', message: 'openai: connection lost mid-stream' });
        })(),
    });
    h = actorHarness({}, { wrapLlm: cutting });
    h.actor.start();
    h.actor.post({ kind: 'text_inject', text: 'tell me', role: 'user' });
    expect(await h.runUntil(() => h.transport.of('turn_complete').length === 1)).toBe(true);
    expect(h.transport.of('llm_error')).toMatchObject([{ code: 'STREAM_INTERRUPTED' }]);
    const timing = h.transport.of('turn_complete')[0]!.timing as { llm_ttfb_ms: number; llm_total_ms: number; steps: unknown[] };
    expect(timing.steps).toHaveLength(1);
    expect(timing.llm_ttfb_ms).toBeGreaterThanOrEqual(300);
    expect(timing.llm_total_ms).toBeGreaterThanOrEqual(500);
  });
});

