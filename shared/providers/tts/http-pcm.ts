/**
 * The body of an HTTP streaming TTS request as PCM chunks: one POST through the shared retrying
 * `openHttpStream` (timeouts and retries from the adapter's options, TTS defaults), bytes turned
 * into samples as they arrive, the stream cancelled however the consumer stops. ElevenLabs and
 * OpenAI speech differ only in URL, headers, body and sample format, so they share this loop.
 */
import { describeJsonError, httpStreamSettings, openHttpStream, TTS_HTTP_DEFAULTS, type HttpAdapterOptions } from '../http.js';
import type { PcmChunk } from '../types.js';
import { ProviderError } from '../errors.js';
import { probeWav, S16leAssembler } from './pcm-bytes.js';

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
  // S16LE bodies only: the first bytes are checked for a WAV header (skipped, its rate used).
  let head: Uint8Array | undefined = req.decode ? undefined : new Uint8Array(0);
  let rateHz = req.sampleRateHz;
  try {
    for (;;) {
      let bytes = await http.next();
      if (bytes === null) break;
      if (head) {
        head = concat(head, bytes);
        const probe = probeWav(head);
        if (probe.kind === 'need_more') continue;
        if (probe.kind === 'unsupported') throw new ProviderError({ provider: req.provider, code: 'MALFORMED_RESPONSE', message: `${req.provider}: ${probe.reason}` });
        bytes = probe.kind === 'wav' ? head.subarray(probe.dataOffset) : head;
        if (probe.kind === 'wav') rateHz = probe.sampleRateHz;
        head = undefined;
      }
      const samples = decode(bytes);
      if (samples.length > 0) yield { samples, sampleRateHz: rateHz };
    }
    // A body shorter than a WAV header's first 12 bytes is raw audio.
    if (head && head.byteLength > 0) {
      const samples = decode(head);
      if (samples.length > 0) yield { samples, sampleRateHz: rateHz };
    }
    // A body ending on an odd byte lost half a sample: inaudible, so dropped rather than failed.
  } finally {
    http.cancel();
  }
}

function concat(a: Uint8Array, b: Uint8Array): Uint8Array {
  if (a.byteLength === 0) return b;
  const out = new Uint8Array(a.byteLength + b.byteLength);
  out.set(a);
  out.set(b, a.byteLength);
  return out;
}
