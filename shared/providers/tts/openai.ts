/**
 * OpenAI speech adapter: `POST {baseUrl}/audio/speech` with `response_format:'pcm'`, whose body is
 * raw 24 kHz S16LE mono streamed with chunked encoding (docs/protocols.md section 7). The engine
 * resamples 24 kHz to the transport rate; we never pretend to produce another rate.
 */
import type { HttpAdapterOptions } from '../http.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { streamHttpPcm } from './http-pcm.js';

export const OPENAI_PCM_RATE_HZ = 24_000;

export interface OpenAiTtsOptions extends HttpAdapterOptions {
  apiKey: string;
  /** Default `https://api.openai.com/v1`; `/audio/speech` is appended. */
  baseUrl?: string;
  /** Default `gpt-4o-mini-tts`. */
  model?: string;
  /** Default `alloy`; a request's `voice` wins. */
  voice?: string;
  /** Style prompt (gpt-4o-mini-tts only). Default none. */
  instructions?: string;
  /** 0.25-4.0. Default none (vendor default 1.0). */
  speed?: number;
}

export function createOpenAiTts(opts: OpenAiTtsOptions): TtsProvider {
  const label = 'openai';
  const baseUrl = (opts.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');

  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    // The API rejects empty input with a 400; nothing to say is not an error.
    if (req.text.trim() === '') return;
    const body: Record<string, unknown> = {
      model: req.model || opts.model || 'gpt-4o-mini-tts',
      input: req.text,
      voice: req.voice || opts.voice || 'alloy',
      response_format: 'pcm',
    };
    if (opts.instructions) body.instructions = opts.instructions;
    if (opts.speed !== undefined) body.speed = opts.speed;
    const headers: Record<string, string> = { 'content-type': 'application/json' };
    if (opts.apiKey) headers.authorization = `Bearer ${opts.apiKey}`;
    yield* streamHttpPcm(opts, { provider: label, url: `${baseUrl}/audio/speech`, headers, body, signal: req.signal, sampleRateHz: OPENAI_PCM_RATE_HZ });
  }

  return {
    label,
    capabilities: { streaming: true, sampleRatesHz: [OPENAI_PCM_RATE_HZ] },
    synthesize: (req) => synthesize(req),
  };
}
