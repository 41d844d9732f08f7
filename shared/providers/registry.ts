/**
 * Provider registry: an agent's provider settings (`provider_name`, `api_key`, `model_name`,
 * `base_url`, `voice`) -> adapter instances. The only place that knows which names exist, which
 * need a key, and the default endpoints of OpenAI-compatible hosts. `SUPPORTED_PROVIDERS` is the
 * same table for the control plane's provider registry and `/voice/capabilities`.
 *
 * `sim` is a named provider like any other, never a silent fallback: a real vendor without its
 * key is an error (MISSING_API_KEY), not a quiet switch to sim.
 *
 * Every real adapter gets the outbound client (`deps.outbound`): a `base_url` on a refused address
 * fails with OUTBOUND_REFUSED before any byte (so the key) is sent.
 */
import type { Clock } from '../clock.js';
import { HTTP_PROTOCOLS, WS_PROTOCOLS, type OutboundClient } from '../outbound/index.js';
import { createDeepgramAsr } from './asr/deepgram.js';
import { createOpenAiTranscribeAsr } from './asr/openai-transcribe.js';
import { createSimAsr, type SimAsrOptions } from './asr/sim.js';
import { ProviderError } from './errors.js';
import { createAnthropicLlm } from './llm/anthropic.js';
import { createOpenAiLlm } from './llm/openai.js';
import { createSimLlm, simDemoScript, type SimLlmOptions } from './llm/sim.js';
import { createCartesiaTts } from './tts/cartesia.js';
import { createElevenLabsTts } from './tts/elevenlabs.js';
import { createOpenAiTts } from './tts/openai.js';
import { checkFliteVoice, createLocalTts, LOCAL_TTS_DEFAULT_VOICE } from './tts/local.js';
import { createSimTts, type SimTtsOptions } from './tts/sim.js';
import type { AsrProvider, LlmProvider, TtsProvider } from './types.js';

export interface ProviderConfig {
  provider_name: string;
  api_key?: string;
  model_name?: string;
  base_url?: string;
  /** TTS voice id/name. */
  voice?: string;
}

export type ProviderKind = 'asr' | 'llm' | 'tts';

export interface ProviderDescriptor {
  name: string;
  /** A key must be configured (MISSING_API_KEY otherwise). */
  requiresKey: boolean;
  /** A `base_url` must be configured (no public default endpoint). */
  requiresBaseUrl: boolean;
  /** The endpoint used when `base_url` is empty. */
  defaultBaseUrl?: string;
  /** The model used when `model_name` is empty. */
  defaultModel?: string;
  /** The adapter speaks WebSocket: `base_url` may be ws:// or wss:// (http(s) works too). */
  websocket?: boolean;
}

const d = (name: string, requiresKey: boolean, extra: Partial<ProviderDescriptor> = {}): ProviderDescriptor => ({
  name,
  requiresKey,
  requiresBaseUrl: false,
  ...extra,
});

/** Every provider the engine can run, per kind. */
export const SUPPORTED_PROVIDERS: Readonly<Record<ProviderKind, readonly ProviderDescriptor[]>> = {
  asr: [
    d('sim', false),
    d('deepgram', true, { defaultBaseUrl: 'wss://api.deepgram.com', defaultModel: 'nova-3', websocket: true }),
    // POST /audio/transcriptions per utterance (our endpointing cuts it); self-hosted servers
    // (faster-whisper-server, whisper.cpp, vLLM) as openai_compatible with their base_url.
    d('openai', true, { defaultBaseUrl: 'https://api.openai.com/v1', defaultModel: 'whisper-1' }),
    d('groq', true, { defaultBaseUrl: 'https://api.groq.com/openai/v1', defaultModel: 'whisper-large-v3-turbo' }),
    d('openai_compatible', false, { requiresBaseUrl: true, defaultModel: 'whisper-1' }),
  ],
  llm: [
    d('sim', false),
    d('openai', true, { defaultBaseUrl: 'https://api.openai.com/v1', defaultModel: 'gpt-4o-mini' }),
    d('groq', true, { defaultBaseUrl: 'https://api.groq.com/openai/v1', defaultModel: 'llama-3.3-70b-versatile' }),
    d('together', true, { defaultBaseUrl: 'https://api.together.xyz/v1', defaultModel: 'meta-llama/Llama-3.3-70B-Instruct-Turbo' }),
    // Self-hosted servers usually run without auth; a key is sent when one is configured.
    d('vllm', false, { requiresBaseUrl: true }),
    d('ollama', false, { defaultBaseUrl: 'http://127.0.0.1:11434/v1', defaultModel: 'llama3.1' }),
    d('openai_compatible', false, { requiresBaseUrl: true }),
    d('anthropic', true, { defaultBaseUrl: 'https://api.anthropic.com', defaultModel: 'claude-3-5-haiku-latest' }),
  ],
  tts: [
    d('sim', false),
    // Offline Flite in worker threads; `model_name` (or `voice`) picks the voice.
    d('local', false, { defaultModel: LOCAL_TTS_DEFAULT_VOICE }),
    d('openai', true, { defaultBaseUrl: 'https://api.openai.com/v1', defaultModel: 'gpt-4o-mini-tts' }),
    d('elevenlabs', true, { defaultBaseUrl: 'https://api.elevenlabs.io', defaultModel: 'eleven_flash_v2_5' }),
    d('cartesia', true, { defaultBaseUrl: 'wss://api.cartesia.ai', defaultModel: 'sonic-2', websocket: true }),
  ],
};

/** Names only, per kind (for `/voice/capabilities`). */
export const SUPPORTED_PROVIDER_NAMES: Readonly<Record<ProviderKind, readonly string[]>> = {
  asr: SUPPORTED_PROVIDERS.asr.map((p) => p.name),
  llm: SUPPORTED_PROVIDERS.llm.map((p) => p.name),
  tts: SUPPORTED_PROVIDERS.tts.map((p) => p.name),
};

/** URL schemes a provider's `base_url` may use (an unknown name: http(s), refused later by name). */
export function baseUrlProtocols(kind: ProviderKind, name: string): readonly string[] {
  const descriptor = SUPPORTED_PROVIDERS[kind].find((p) => p.name === name.trim().toLowerCase());
  return descriptor?.websocket ? WS_PROTOCOLS : HTTP_PROTOCOLS;
}

const KIND_LABEL: Record<ProviderKind, string> = { asr: 'ASR', llm: 'LLM', tts: 'TTS' };

export interface ResolvedProvider {
  descriptor: ProviderDescriptor;
  apiKey: string;
  baseUrl?: string;
  model?: string;
  voice?: string;
}

/**
 * Validates one provider's settings and fills defaults. Pure (no instances), so the control plane
 * can reject a bad agent configuration before a call ever starts.
 */
export function resolveProviderConfig(kind: ProviderKind, config: ProviderConfig): ResolvedProvider {
  const name = (config.provider_name ?? '').trim().toLowerCase();
  const descriptor = SUPPORTED_PROVIDERS[kind].find((p) => p.name === name);
  if (!descriptor)
    throw new ProviderError({
      provider: name || '(empty)',
      code: 'UNKNOWN_PROVIDER',
      message: `unknown ${KIND_LABEL[kind]} provider "${config.provider_name}" (supported: ${SUPPORTED_PROVIDER_NAMES[kind].join(', ')})`,
    });
  const apiKey = config.api_key?.trim() ?? '';
  if (descriptor.requiresKey && !apiKey)
    throw new ProviderError({ provider: name, code: 'MISSING_API_KEY', message: `missing ${KIND_LABEL[kind]} provider key (${name})` });
  const baseUrl = config.base_url?.trim() || descriptor.defaultBaseUrl;
  if (descriptor.requiresBaseUrl && !baseUrl)
    throw new ProviderError({ provider: name, code: 'MISSING_BASE_URL', message: `missing ${KIND_LABEL[kind]} provider base_url (${name})` });
  const model = config.model_name?.trim() || descriptor.defaultModel;
  const voice = config.voice?.trim() || undefined;
  // Flite would quietly speak an unknown voice as `kal`: refuse it here, before any call starts.
  if (kind === 'tts' && name === 'local') checkFliteVoice(voice || model);
  return { descriptor, apiKey, baseUrl, model, voice };
}

export interface ProvidersConfig {
  asr?: ProviderConfig;
  llm?: ProviderConfig;
  tts?: ProviderConfig;
}

/** A session's full set: all three kinds configured. */
export type AllProvidersConfig = Required<ProvidersConfig>;
/**
 * At least one kind left out. Overload order matters: `ReturnType<typeof createProviders>` reads
 * the LAST overload, so the full-set one goes last and this one must not match full sets.
 */
export type SomeProvidersConfig = ProvidersConfig & ({ asr?: undefined } | { llm?: undefined } | { tts?: undefined });

export interface ProviderDeps {
  clock: Clock;
  /**
   * The outbound client (shared/outbound): `base_url` is tenant input, so every real adapter
   * connects through the address policy (vendor default URLs pass it harmlessly). Required, so
   * no code path can build a tenant-configured adapter without the policy.
   */
  outbound: OutboundClient;
  /**
   * The session's language. Deepgram takes it as its default, so a `warm()` socket is opened with
   * the same URL the call's stream asks for (else the warm socket is never adopted).
   */
  language?: string;
  /** Options for the sim providers (scripted LLM replies, latencies). */
  simOptions?: { asr?: SimAsrOptions; llm?: SimLlmOptions; tts?: SimTtsOptions };
}

export interface Providers {
  asr?: AsrProvider;
  llm?: LlmProvider;
  tts?: TtsProvider;
}

export type SessionProviders = Required<Providers>;

export function createAsrProvider(config: ProviderConfig, deps: ProviderDeps): AsrProvider {
  const r = resolveProviderConfig('asr', config);
  if (r.descriptor.name === 'sim') return createSimAsr({ clock: deps.clock, ...deps.simOptions?.asr });
  if (r.descriptor.name !== 'deepgram')
    return createOpenAiTranscribeAsr({ apiKey: r.apiKey, baseUrl: r.baseUrl, model: r.model, language: deps.language || undefined, label: r.descriptor.name, clock: deps.clock, outbound: deps.outbound });
  return createDeepgramAsr({ apiKey: r.apiKey, baseUrl: r.baseUrl, model: r.model, language: deps.language || undefined, clock: deps.clock, outbound: deps.outbound });
}

export function createLlmProvider(config: ProviderConfig, deps: ProviderDeps): LlmProvider {
  const r = resolveProviderConfig('llm', config);
  const name = r.descriptor.name;
  // Without a script of its own, sim answers with the demo script (a long answer to interrupt, a goodbye, a weather tool when offered).
  if (name === 'sim') return createSimLlm({ clock: deps.clock, script: simDemoScript, ...deps.simOptions?.llm });
  if (name === 'anthropic') return createAnthropicLlm({ apiKey: r.apiKey, baseUrl: r.baseUrl, model: r.model ?? '', clock: deps.clock, outbound: deps.outbound });
  // openai, groq, together, vllm, ollama, openai_compatible all speak Chat Completions.
  return createOpenAiLlm({ apiKey: r.apiKey, baseUrl: r.baseUrl, model: r.model ?? '', label: name, clock: deps.clock, outbound: deps.outbound });
}

export function createTtsProvider(config: ProviderConfig, deps: ProviderDeps): TtsProvider {
  const r = resolveProviderConfig('tts', config);
  const common = { apiKey: r.apiKey, baseUrl: r.baseUrl, model: r.model, voice: r.voice, clock: deps.clock, outbound: deps.outbound };
  switch (r.descriptor.name) {
    case 'sim':
      return createSimTts({ clock: deps.clock, ...deps.simOptions?.tts });
    case 'local':
      return createLocalTts({ voice: checkFliteVoice(r.voice || r.model) });
    case 'openai':
      return createOpenAiTts(common);
    case 'elevenlabs':
      return createElevenLabsTts(common);
    default:
      return createCartesiaTts(common);
  }
}

/**
 * Builds the providers a session needs. Throws ProviderError (UNKNOWN_PROVIDER, MISSING_API_KEY,
 * MISSING_BASE_URL) before anything connects, so a misconfigured agent fails at socket start with
 * a message naming the missing key.
 */
export function createProviders(config: SomeProvidersConfig, deps: ProviderDeps): Providers;
export function createProviders(config: AllProvidersConfig, deps: ProviderDeps): SessionProviders;
export function createProviders(config: ProvidersConfig, deps: ProviderDeps): Providers {
  // Validate all three first: a missing LLM key must not leave an ASR socket half-opened.
  if (config.asr) resolveProviderConfig('asr', config.asr);
  if (config.llm) resolveProviderConfig('llm', config.llm);
  if (config.tts) resolveProviderConfig('tts', config.tts);
  return {
    asr: config.asr ? createAsrProvider(config.asr, deps) : undefined,
    llm: config.llm ? createLlmProvider(config.llm, deps) : undefined,
    tts: config.tts ? createTtsProvider(config.tts, deps) : undefined,
  };
}
