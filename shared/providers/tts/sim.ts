/**
 * `sim` TTS: speaks text as the in-band sim audio code (providers/sim/codec.ts), so the sim ASR on
 * the other side of a real audio path can read it back. No network, deterministic output.
 */
import { realClock, sleepOn, type Clock } from '../../clock.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { encodeText } from '../sim/codec.js';

type SimTtsRateHz = 8000 | 16000 | 24000;
const SUPPORTED_RATES_HZ: readonly SimTtsRateHz[] = [8000, 16000, 24000];

export interface SimTtsOptions {
  /** Delay before the first chunk, as a vendor's time to first byte. Default 0. */
  ttfbMs?: number;
  /** Duration of each emitted chunk. Default 40. */
  chunkMs?: number;
  /** Time source for `ttfbMs`. Default `realClock`. */
  clock?: Clock;
  /** Rate used when the request's `preferredSampleRateHz` is not one we produce. Default 16000. */
  sampleRateHz?: SimTtsRateHz;
}

export interface SimTtsProvider extends TtsProvider {
  /** How many `synthesize` calls were made (tests count attempts with it). */
  readonly requestCount: number;
}

export function createSimTts(opts: SimTtsOptions = {}): SimTtsProvider {
  const ttfbMs = opts.ttfbMs ?? 0;
  const chunkMs = opts.chunkMs ?? 40;
  const clock = opts.clock ?? realClock;
  const defaultRateHz = opts.sampleRateHz ?? 16000;
  if (!(chunkMs > 0)) throw new RangeError(`sim TTS: chunkMs must be > 0, got ${chunkMs}`);
  let requestCount = 0;

  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    requestCount++;
    const { signal } = req;
    throwIfAborted(signal);
    const rateHz = SUPPORTED_RATES_HZ.find((r) => r === req.preferredSampleRateHz) ?? defaultRateHz;
    if (ttfbMs > 0) await sleep(clock, ttfbMs, signal);
    const samples = encodeText(req.text, rateHz);
    // Emitted as fast as the consumer pulls: pacing to real time happens downstream.
    const chunkSamples = Math.max(1, Math.round((rateHz * chunkMs) / 1000));
    for (let start = 0; start < samples.length; start += chunkSamples) {
      throwIfAborted(signal);
      // A copy, not a view, so a consumer may transfer or keep the buffer (e.g. to a worker).
      yield { samples: samples.slice(start, start + chunkSamples), sampleRateHz: rateHz };
    }
    throwIfAborted(signal);
  }

  return {
    label: 'sim',
    capabilities: { streaming: true, sampleRatesHz: [...SUPPORTED_RATES_HZ] },
    synthesize,
    get requestCount() {
      return requestCount;
    },
  };
}

function abortError(): DOMException {
  return new DOMException('sim TTS request aborted', 'AbortError');
}

function throwIfAborted(signal: AbortSignal): void {
  if (signal.aborted) throw abortError();
}

function sleep(clock: Clock, ms: number, signal: AbortSignal): Promise<void> {
  return sleepOn(clock, ms, signal, abortError);
}
