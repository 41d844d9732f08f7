/**
 * The body of an HTTP streaming TTS request as PCM chunks: one POST through the shared retrying
 * `openHttpStream` (timeouts and retries from the adapter's options, TTS defaults), bytes turned
 * into samples as they arrive, the stream cancelled however the consumer stops. ElevenLabs and
 * OpenAI speech differ only in URL, headers, body and sample format, so they share this loop.
 */
import { describeJsonError, httpStreamSettings, openHttpStream, TTS_HTTP_DEFAULTS, type HttpAdapterOptions } from '../http.js';
import type { PcmChunk } from '../types.js';
import { S16leAssembler } from './pcm-bytes.js';

export interface HttpPcmRequest {
  provider: string;
  url: string;
  headers: Record<string, string>;
  body: unknown;
  signal: AbortSignal;
  sampleRateHz: number;
  /** Bytes -> samples when the body is not S16LE (mu-law). Default: S16LE, reassembled across chunks. */
  decode?: (bytes: Uint8Array) => Int16Array;
}

/** Yields the response body as PCM at `sampleRateHz`; empty chunks are skipped. */
export async function* streamHttpPcm(opts: HttpAdapterOptions, req: HttpPcmRequest): AsyncGenerator<PcmChunk> {
  const http = await openHttpStream({
    provider: req.provider,
    url: req.url,
    headers: req.headers,
    body: JSON.stringify(req.body),
    signal: req.signal,
    describeError: describeJsonError,
    ...httpStreamSettings(opts, TTS_HTTP_DEFAULTS),
  });
  const pcm = new S16leAssembler();
  const decode = req.decode ?? ((bytes: Uint8Array) => pcm.push(bytes));
  try {
    for (;;) {
      const bytes = await http.next();
      if (bytes === null) break;
      const samples = decode(bytes);
      if (samples.length > 0) yield { samples, sampleRateHz: req.sampleRateHz };
    }
    // A body ending on an odd byte lost half a sample: inaudible, so dropped rather than failed.
  } finally {
    http.cancel();
  }
}
