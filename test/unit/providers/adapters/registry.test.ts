import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { realClock } from '../../../../shared/clock.js';
import { createOutboundClient } from '../../../../shared/outbound/index.js';
import {
  SUPPORTED_PROVIDERS,
  SUPPORTED_PROVIDER_NAMES,
  createProviders,
  resolveProviderConfig,
  type ProviderKind,
} from '../../../../shared/providers/registry.js';
import { DeepgramFake } from '../../../fakes/deepgram.js';
import { OpenAiFake } from '../../../fakes/openai.js';
import { collect } from './helpers.js';
import { finalText, speak } from '../../../contracts/asr.contract.js';

// The fakes listen on loopback, which the outbound policy refuses unless listed.
const outbound = createOutboundClient({ allowCidrs: ['127.0.0.0/8'] });
const deps = { clock: realClock, outbound };
const openai = new OpenAiFake({ rules: [{ match: 'hi', reply: 'Hello.' }] });
const deepgram = new DeepgramFake();
beforeAll(async () => {
  await openai.start();
  await deepgram.start();
});
afterAll(async () => {
  await openai.close();
  await deepgram.close();
  await outbound.close();
});

describe('provider registry', () => {
  it('lists every provider per kind with its key requirement', () => {
    expect(SUPPORTED_PROVIDER_NAMES).toEqual({
      asr: ['sim', 'deepgram', 'openai', 'groq', 'openai_compatible'],
      llm: ['sim', 'openai', 'groq', 'together', 'vllm', 'ollama', 'openai_compatible', 'anthropic'],
      tts: ['sim', 'local', 'openai', 'elevenlabs', 'cartesia'],
    });
    const needsKey = (k: ProviderKind) => SUPPORTED_PROVIDERS[k].filter((p) => p.requiresKey).map((p) => p.name);
    expect(needsKey('llm')).toEqual(['openai', 'groq', 'together', 'anthropic']);
    expect(needsKey('asr')).toEqual(['deepgram', 'openai', 'groq']);
    expect(needsKey('tts')).toEqual(['openai', 'elevenlabs', 'cartesia']);
  });

  it.each([
    ['asr', 'deepgram'],
    ['asr', 'openai'],
    ['asr', 'groq'],
    ['llm', 'openai'],
    ['llm', 'groq'],
    ['llm', 'anthropic'],
    ['tts', 'openai'],
    ['tts', 'elevenlabs'],
    ['tts', 'cartesia'],
  ] as const)('a %s provider "%s" without api_key throws MISSING_API_KEY naming it', (kind, name) => {
    let err: any;
    try {
      resolveProviderConfig(kind, { provider_name: name, api_key: '  ' });
    } catch (e) {
      err = e;
    }
    expect(err).toMatchObject({ name: 'ProviderError', code: 'MISSING_API_KEY', provider: name });
    // The spec requires the socket error message to name the missing provider key.
    expect(err.message).toBe(`missing ${kind.toUpperCase()} provider key (${name})`);
  });

  it('createProviders validates every kind before creating anything', () => {
    expect(() =>
      createProviders({ asr: { provider_name: 'sim' }, llm: { provider_name: 'openai' }, tts: { provider_name: 'sim' } }, deps),
    ).toThrow(expect.objectContaining({ code: 'MISSING_API_KEY', provider: 'openai' }));
  });

  it('unknown names throw UNKNOWN_PROVIDER; vllm without base_url throws MISSING_BASE_URL', () => {
    expect(() => resolveProviderConfig('llm', { provider_name: 'gpt-hal' })).toThrow(expect.objectContaining({ code: 'UNKNOWN_PROVIDER' }));
    expect(() => resolveProviderConfig('tts', { provider_name: 'deepgram', api_key: 'k' })).toThrow(
      expect.objectContaining({ code: 'UNKNOWN_PROVIDER' }),
    );
    expect(() => resolveProviderConfig('llm', { provider_name: 'vllm', model_name: 'm' })).toThrow(
      expect.objectContaining({ code: 'MISSING_BASE_URL' }),
    );
  });

  it('fills default base URLs for OpenAI-compatible hosts; an explicit base_url wins', () => {
    const base = (name: string, base_url?: string) => resolveProviderConfig('llm', { provider_name: name, api_key: 'k', base_url }).baseUrl;
    expect(base('groq')).toBe('https://api.groq.com/openai/v1');
    expect(base('together')).toBe('https://api.together.xyz/v1');
    expect(base('ollama')).toBe('http://127.0.0.1:11434/v1');
    expect(base('openai')).toBe('https://api.openai.com/v1');
    expect(base('groq', 'http://proxy.local/v1')).toBe('http://proxy.local/v1');
    expect(resolveProviderConfig('llm', { provider_name: 'OpenAI', api_key: 'k', model_name: '' }).model).toBe('gpt-4o-mini');
  });

  it('sim for all three: instances, no key needed', () => {
    const p = createProviders({ asr: { provider_name: 'sim' }, llm: { provider_name: 'sim' }, tts: { provider_name: 'sim' } }, deps);
    expect([p.asr.label, p.llm.label, p.tts.label]).toEqual(['sim', 'sim', 'sim']);
  });

  it('openai_compatible (no key) and deepgram built from config talk to their fakes', async () => {
    const p = createProviders(
      {
        // The control plane only stores http(s) base URLs: ws accepts them and maps to ws(s).
        asr: { provider_name: 'deepgram', api_key: deepgram.apiKey, base_url: deepgram.url.replace('ws://', 'http://') },
        llm: { provider_name: 'openai_compatible', base_url: `${openai.url}/v1`, model_name: 'local-model' },
      },
      deps,
    );
    // The compatible fake wants its key: a keyless server is simulated by sending none and reading the 401.
    const llmError = await collect(p.llm!.stream({ messages: [{ role: 'user', content: 'hi' }], tools: [], signal: new AbortController().signal })).catch((e) => e);
    expect(llmError).toMatchObject({ code: 'AUTH_FAILED', provider: 'openai_compatible' });
    expect(openai.requests.at(-1)!.headers.authorization).toBeUndefined();
    expect(openai.requests.at(-1)!.body.model).toBe('local-model');

    const s = p.asr!.stream({ sampleRateHz: 16000, encoding: 'linear16' });
    speak(s, 'hi there', 16000, 'linear16');
    s.end();
    expect(finalText(await collect(s))).toBe('hi there');
  });
});
