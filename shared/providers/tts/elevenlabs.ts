/**
 * ElevenLabs HTTP streaming adapter: `POST /v1/text-to-speech/{voice_id}/stream?output_format=…`
 * with `xi-api-key` (docs/protocols.md section 7). The output format is chosen so the vendor produces
 * the transport's rate directly: `ulaw_8000` for carriers (decoded through a table, giving the
 * exact samples the carrier will re-encode, no resampling), `pcm_16000` / `pcm_24000` otherwise.
 */
import type { HttpAdapterOptions } from '../http.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { streamHttpPcm } from './http-pcm.js';
import { decodeMulaw } from './pcm-bytes.js';

export interface ElevenLabsTtsOptions extends HttpAdapterOptions {
  apiKey: string;
  /** Default `https://api.elevenlabs.io`. */
  baseUrl?: string;
  /** `model_id`. Default `eleven_flash_v2_5` (lowest latency). */
  model?: string;
  /** Voice id. Default `21m00Tcm4TlvDq8ikWAM` (a premade voice); a request's `voice` wins. */
  voice?: string;
  /** `voice_settings` passed through as is. Default none (vendor defaults). */
  voiceSettings?: Record<string, unknown>;
}

/** The `output_format` we ask for and the rate it yields. */
export function elevenLabsFormat(preferredSampleRateHz: number): { outputFormat: string; sampleRateHz: number; mulaw: boolean } {
  switch (preferredSampleRateHz) {
    case 8000:
      return { outputFormat: 'ulaw_8000', sampleRateHz: 8000, mulaw: true };
    case 24000:
      return { outputFormat: 'pcm_24000', sampleRateHz: 24000, mulaw: false };
    default:
      // 16 kHz is the browser transport's rate and available on every plan tier.
      return { outputFormat: 'pcm_16000', sampleRateHz: 16000, mulaw: false };
  }
}

export function createElevenLabsTts(opts: ElevenLabsTtsOptions): TtsProvider {
  const label = 'elevenlabs';
  const baseUrl = (opts.baseUrl ?? 'https://api.elevenlabs.io').replace(/\/+$/, '');

  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    if (req.text.trim() === '') return;
    const fmt = elevenLabsFormat(req.preferredSampleRateHz);
    const voice = encodeURIComponent(req.voice || opts.voice || '21m00Tcm4TlvDq8ikWAM');
    const body: Record<string, unknown> = { text: req.text, model_id: req.model || opts.model || 'eleven_flash_v2_5' };
    if (opts.voiceSettings) body.voice_settings = opts.voiceSettings;
    // `language_code` is deliberately not sent: only some models accept it and the others
    // reject the request [unverified which]; the multilingual models detect the language.
    yield* streamHttpPcm(opts, {
      provider: label,
      url: `${baseUrl}/v1/text-to-speech/${voice}/stream?output_format=${fmt.outputFormat}`,
      headers: { 'content-type': 'application/json', 'xi-api-key': opts.apiKey },
      body,
      signal: req.signal,
      sampleRateHz: fmt.sampleRateHz,
      // mu-law is one byte per sample, so chunk boundaries never split a sample.
      decode: fmt.mulaw ? decodeMulaw : undefined,
    });
  }

  return {
    label,
    capabilities: { streaming: true, sampleRatesHz: [8000, 16000, 24000] },
    synthesize: (req) => synthesize(req),
  };
}
