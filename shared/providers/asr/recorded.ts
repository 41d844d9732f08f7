/**
 * Transcribes recorded audio (a whole channel of a call recording) with any `AsrProvider`: the
 * streaming interface was built for live calls, so the recording is cut into utterances first and
 * each utterance goes through its own short stream (push its frames, `end()`, read the finals).
 *
 * - Utterances: 20 ms frames; a frame is voiced at RMS >= `voicedRms` (the transcription adapter's
 *   own threshold); voiced frames closer than `gapMs` belong to one utterance, padded by
 *   `padMs` on both sides (the first syllable's attack, a tail). An utterance longer than
 *   `maxUtteranceMs` is cut (the OpenAI-compatible adapter keeps at most 30 s per upload).
 * - One stream at a time, in order: a provider that uploads per utterance is never flooded, and
 *   the adapter's own bounded queue never drops one.
 * - Errors: an `error` event, or no end within `utteranceTimeoutMs`, throws (the caller retries
 *   the whole recording; nothing is returned half-done). At most `maxUtterances` per channel.
 */
import type { Clock } from '../../clock.js';
import type { AsrProvider } from '../types.js';
import { DEFAULT_VOICED_RMS, rms } from '../audio/level.js';

export interface RecordedUtterance {
  /** Offset in the recording. */
  startMs: number;
  endMs: number;
  text: string;
  confidence?: number;
}

export interface RecordedOptions {
  clock: Clock;
  language?: string;
  signal?: AbortSignal;
  /** Default 300 (int16 RMS, about -40 dBFS). */
  voicedRms?: number;
  /** Silence that ends an utterance. Default 700 ms. */
  gapMs?: number;
  /** Padding kept around voiced audio. Default 120 ms. */
  padMs?: number;
  /** Longest utterance sent at once. Default 25 000 ms. */
  maxUtteranceMs?: number;
  /** Per utterance. Default 60 000 ms. */
  utteranceTimeoutMs?: number;
  /** Default 2000. */
  maxUtterances?: number;
}

const FRAME_MS = 20;

/** Voiced spans of `samples` as [startSample, endSample) pairs (padded, merged, length-capped). */
export function utteranceSpans(samples: Int16Array, rateHz: number, o: Pick<RecordedOptions, 'voicedRms' | 'gapMs' | 'padMs' | 'maxUtteranceMs'> = {}): Array<[number, number]> {
  const frame = Math.round((rateHz * FRAME_MS) / 1000);
  const threshold = o.voicedRms ?? DEFAULT_VOICED_RMS;
  const gap = Math.round((rateHz * (o.gapMs ?? 700)) / 1000);
  const pad = Math.round((rateHz * (o.padMs ?? 120)) / 1000);
  const maxLen = Math.round((rateHz * (o.maxUtteranceMs ?? 25_000)) / 1000);
  const spans: Array<[number, number]> = [];
  let start = -1;
  let lastVoicedEnd = -1;
  for (let at = 0; at < samples.length; at += frame) {
    const end = Math.min(samples.length, at + frame);
    const voiced = rms(samples.subarray(at, end)) >= threshold;
    if (voiced) {
      if (start < 0) start = at;
      else if (at - lastVoicedEnd > gap || end - start > maxLen) {
        spans.push([start, lastVoicedEnd]);
        start = at;
      }
      lastVoicedEnd = end;
    }
  }
  if (start >= 0) spans.push([start, lastVoicedEnd]);
  // Padding, without overlapping the neighbours.
  return spans.map(([s, e], i) => [Math.max(0, s - pad, i > 0 ? spans[i - 1]![1] : 0), Math.min(samples.length, e + pad, i + 1 < spans.length ? spans[i + 1]![0] : samples.length)]);
}

/** The finals of each utterance of one channel, in order; utterances that give no text are left out. */
export async function transcribeRecorded(asr: AsrProvider, samples: Int16Array, rateHz: number, o: RecordedOptions): Promise<RecordedUtterance[]> {
  if (!asr.capabilities.sampleRatesHz.includes(rateHz)) throw new RangeError(`${asr.label} ASR does not take ${rateHz} Hz audio (takes ${asr.capabilities.sampleRatesHz.join(', ')})`);
  const spans = utteranceSpans(samples, rateHz, o);
  const max = o.maxUtterances ?? 2000;
  if (spans.length > max) throw new RangeError(`recording has ${spans.length} utterances (at most ${max})`);
  const frame = Math.round((rateHz * FRAME_MS) / 1000);
  const out: RecordedUtterance[] = [];
  for (const [s, e] of spans) {
    o.signal?.throwIfAborted();
    const text: string[] = [];
    let confidence: number | undefined;
    const stream = asr.stream({ sampleRateHz: rateHz, encoding: 'linear16', language: o.language });
    const timeoutMs = o.utteranceTimeoutMs ?? 60_000;
    let timedOut = false;
    const timer = o.clock.setTimeout(() => ((timedOut = true), stream.close()), timeoutMs);
    const onAbort = () => stream.close();
    o.signal?.addEventListener('abort', onAbort, { once: true });
    try {
      for (let at = s; at < e; at += frame) stream.push(samples.slice(at, Math.min(e, at + frame)));
      stream.end();
      for await (const ev of stream) {
        if (ev.type === 'final' && ev.text.trim()) {
          text.push(ev.text.trim());
          confidence = ev.confidence ?? confidence;
        } else if (ev.type === 'error') {
          throw new Error(`${asr.label} ASR: ${ev.message}`);
        }
      }
    } finally {
      o.clock.clearTimeout(timer);
      o.signal?.removeEventListener('abort', onAbort);
      stream.close();
    }
    if (timedOut) throw new Error(`${asr.label} ASR: no answer within ${timeoutMs} ms`);
    o.signal?.throwIfAborted();
    if (text.length) out.push({ startMs: Math.round((s * 1000) / rateHz), endMs: Math.round((e * 1000) / rateHz), text: text.join(' '), confidence });
  }
  return out;
}
