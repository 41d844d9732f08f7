/**
 * Audio mode of a simulated conversation: a line is spoken by a TTS and heard by an ASR, so a
 * test also exercises the version's speech providers (sim offline, or the real vendors) and shows
 * what each side understood. No real-time pacing and no VAD: the audio is pushed as fast as the
 * TTS produces it, followed by a short silence, then the ASR stream is ended and its finals read.
 *
 * Bounds: at most MAX_UTTERANCE_S of audio per line reaches the ASR (the rest is dropped, a longer
 * answer is not something a caller would sit through); each line's recognition must finish within
 * the request timeout.
 */
import type { Clock } from '../../shared/clock.js';
import type { AsrProvider, AsrStream, PcmChunk, TtsProvider } from '../../shared/providers/types.js';
import { ProviderFailure } from './forced-call.js';

export interface SpeechPath {
  asr: AsrProvider;
  tts: TtsProvider;
  language?: string;
  ttsVoice?: string;
  ttsModel?: string;
}

/** The rate asked of the TTS (the engine's browser rate). */
export const TTS_RATE_HZ = 16000;
const MAX_UTTERANCE_S = 120;
/** Silence after a line, so an ASR that endpoints on silence closes the segment. */
const TRAILING_SILENCE_MS = 600;
const FRAME_MS = 20;

/** One ASR stream fed with PCM chunks of any rate; `text()` ends it and answers what it recognised. */
export class Listener {
  private readonly stream: AsrStream;
  private readonly rateHz: number;
  private readonly finals: string[] = [];
  private readonly reading: Promise<void>;
  private pushedSamples = 0;

  constructor(
    private readonly path: SpeechPath,
    private readonly who: 'agent' | 'caller',
    private readonly o: { clock: Clock; timeoutMs: number },
  ) {
    this.rateHz = path.asr.capabilities.sampleRatesHz.includes(16000) ? 16000 : (path.asr.capabilities.sampleRatesHz[0] ?? 16000);
    const stream = path.asr.stream({ sampleRateHz: this.rateHz, encoding: 'linear16', language: path.language });
    this.stream = stream;
    this.reading = (async () => {
      for await (const ev of stream) {
        if (ev.type === 'final' && ev.text.trim()) this.finals.push(ev.text.trim());
        else if (ev.type === 'error' && !ev.recoverable) throw new ProviderFailure(who, `ASR: ${ev.message}`);
      }
    })();
    // Read errors surface in text(); never as an unhandled rejection before it.
    this.reading.catch(() => undefined);
  }

  push(chunk: PcmChunk): void {
    const samples = resampleLinear(chunk.samples, chunk.sampleRateHz, this.rateHz);
    const max = MAX_UTTERANCE_S * this.rateHz;
    const frame = (this.rateHz * FRAME_MS) / 1000;
    for (let i = 0; i < samples.length && this.pushedSamples < max; i += frame) {
      const part = samples.subarray(i, Math.min(samples.length, i + frame));
      this.stream.push(part);
      this.pushedSamples += part.length;
    }
  }

  async text(): Promise<string> {
    const frame = new Int16Array((this.rateHz * FRAME_MS) / 1000);
    for (let ms = 0; ms < TRAILING_SILENCE_MS; ms += FRAME_MS) this.stream.push(frame);
    this.stream.end();
    let timer: ReturnType<Clock['setTimeout']> | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = this.o.clock.setTimeout(() => reject(new ProviderFailure(this.who, `ASR did not finish within ${this.o.timeoutMs} ms`)), this.o.timeoutMs);
    });
    try {
      await Promise.race([this.reading, timeout]);
    } catch (err) {
      if (err instanceof ProviderFailure) throw err;
      throw new ProviderFailure(this.who, `ASR: ${(err as Error).message}`);
    } finally {
      this.o.clock.clearTimeout(timer);
      this.stream.close();
    }
    return this.finals.join(' ');
  }

  close(): void {
    this.stream.close();
  }
}

/** The caller's line, spoken by the TTS and heard by the agent's ASR. */
export async function speakAndHear(path: SpeechPath, text: string, o: { clock: Clock; timeoutMs: number; signal: AbortSignal }): Promise<string> {
  const listener = new Listener(path, 'agent', o);
  try {
    for await (const chunk of path.tts.synthesize({ text, voice: path.ttsVoice, model: path.ttsModel, language: path.language, preferredSampleRateHz: TTS_RATE_HZ, signal: o.signal })) {
      listener.push(chunk);
    }
  } catch (err) {
    listener.close();
    if (o.signal.aborted) throw o.signal.reason as Error;
    throw new ProviderFailure('caller', `TTS: ${(err as Error).message}`);
  }
  return listener.text();
}

/**
 * Linear interpolation between rates. Good enough for recognition in a test (this is not the
 * call path, which uses media-engine/audio's filtered resampler); identity when the rates match.
 */
export function resampleLinear(input: Int16Array, fromHz: number, toHz: number): Int16Array {
  if (fromHz === toHz || input.length === 0) return input;
  const outLength = Math.max(1, Math.floor((input.length * toHz) / fromHz));
  const out = new Int16Array(outLength);
  const step = fromHz / toHz;
  for (let i = 0; i < outLength; i++) {
    const pos = i * step;
    const j = Math.floor(pos);
    const frac = pos - j;
    const a = input[j] ?? 0;
    const b = input[Math.min(j + 1, input.length - 1)] ?? a;
    out[i] = Math.round(a + (b - a) * frac);
  }
  return out;
}
