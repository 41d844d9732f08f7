/**
 * OpenAI speech adapter: `POST {baseUrl}/audio/speech` with `response_format:'pcm'`, whose body is
 * raw 24 kHz S16LE mono streamed with chunked encoding (protocols.md section 7). The engine
 * resamples 24 kHz to the transport rate; we never pretend to produce another rate.
 */
import { realClock, type Clock } from '../../../shared/clock.js';
import type { ProviderError } from '../errors.js';
import { describeJsonError, openHttpStream } from '../http.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { S16leAssembler } from './pcm-bytes.js';

export const OPENAI_PCM_RATE_HZ = 24_000;

export interface OpenAiTtsOptions {
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
  /** Request sent -> first audio byte. Default 10000. */
  timeoutMs?: number;
  /** Longest gap between audio chunks. Default 15000. */
  idleTimeoutMs?: number;
  /**
   * Retries inside the adapter. Default 0: TTS retries belong to withTtsRetry so the engine can
   * report them (`tts_retry`); set >0 only when using the adapter without the decorator.
   */
  maxRetries?: number;
  /** Default 200. */
  baseBackoffMs?: number;
  /** Default 5000. */
  maxRetryAfterMs?: number;
  clock?: Clock;
  onRetry?(retry: number, backoffMs: number, cause: ProviderError): void;
}

export function createOpenAiTts(opts: OpenAiTtsOptions): TtsProvider {
  const label = 'openai';
  const baseUrl = (opts.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
  const clock = opts.clock ?? realClock;

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
    const http = await openHttpStream({
      provider: label,
      url: `${baseUrl}/audio/speech`,
      headers,
      body: JSON.stringify(body),
      signal: req.signal,
      clock,
      firstByteTimeoutMs: opts.timeoutMs ?? 10_000,
      idleTimeoutMs: opts.idleTimeoutMs ?? 15_000,
      maxRetries: opts.maxRetries ?? 0,
      baseBackoffMs: opts.baseBackoffMs ?? 200,
      maxRetryAfterMs: opts.maxRetryAfterMs ?? 5_000,
      describeError: describeJsonError,
      onRetry: opts.onRetry,
    });
    const pcm = new S16leAssembler();
    try {
      for (;;) {
        const bytes = await http.next();
        if (bytes === null) break;
        const samples = pcm.push(bytes);
        if (samples.length > 0) yield { samples, sampleRateHz: OPENAI_PCM_RATE_HZ };
      }
      // A body ending on an odd byte lost half a sample: inaudible, so dropped rather than failed.
    } finally {
      http.cancel();
    }
  }

  return {
    label,
    capabilities: { streaming: true, sampleRatesHz: [OPENAI_PCM_RATE_HZ] },
    synthesize: (req) => synthesize(req),
  };
}
