/**
 * `local` TTS: real words with no key and no network. Flite (BSD-style licence, see
 * docs/adr/0005-local-tts.md) in worker threads (flite-pool.ts). Text is cut into sentences; each
 * is synthesized whole (~0.03 s per second of speech) while the previous one is being played, so
 * the first audio comes one sentence's synthesis after the request and the rest streams behind.
 *
 * Output is the voice's native rate (16 kHz; 8 kHz for `kal`): the engine's speech output
 * resamples it to the call's rate (8 kHz carrier, 16 kHz browser) with the shared resampler.
 * The voice is `voice`, else `model_name` (`slt` by default), one of FLITE_VOICES.
 */
import { abortedError, ProviderError } from '../errors.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { FLITE_VOICES, sharedFlitePool, type FlitePool, type FliteVoice } from './flite-pool.js';

export interface LocalTtsOptions {
  /** Default `slt` (US English, female). A request's `voice` wins. */
  voice?: string;
  /** Default: the process-wide pool. */
  pool?: FlitePool;
  /** Chunk length handed to the engine. Default 40 ms. */
  chunkMs?: number;
}

export const LOCAL_TTS_DEFAULT_VOICE: FliteVoice = 'slt';

/** Throws BAD_REQUEST unless `voice` is a Flite voice (Flite itself silently falls back to `kal`). */
export function checkFliteVoice(voice: string | undefined): FliteVoice {
  const v = (voice ?? '').trim().toLowerCase() || LOCAL_TTS_DEFAULT_VOICE;
  if (!(FLITE_VOICES as readonly string[]).includes(v))
    throw new ProviderError({ provider: 'local', code: 'BAD_REQUEST', message: `local TTS: unknown voice "${voice}" (supported: ${FLITE_VOICES.join(', ')})` });
  return v as FliteVoice;
}

/**
 * Flite's memory grows with the speech one run renders, and under Node 20's WASI a run whose
 * memory passes ~48 MiB kills the whole process (SIGSEGV or SIGABRT, no JavaScript error): measured
 * with flite.wasm alone, 7-8 of 8 runs of an 800-1000 character sentence and 5 of 6 runs of 150
 * characters of digits crashed; 600 characters of words reached 46 MiB and survived. So one run
 * gets at most `MAX_PIECE_WEIGHT`, a digit weighing `DIGIT_WEIGHT` (it is read out as words):
 * 300 characters of words or 60 digits stay under ~35 MiB.
 */
export const MAX_PIECE_WEIGHT = 300;
const DIGIT_WEIGHT = 5;

/** Index just past the longest prefix of `text` within MAX_PIECE_WEIGHT (at least 1). */
function pieceEnd(text: string): number {
  let weight = 0;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    weight += c >= 48 && c <= 57 ? DIGIT_WEIGHT : 1;
    if (weight > MAX_PIECE_WEIGHT) return Math.max(1, i);
  }
  return text.length;
}

/**
 * Sentences cut after . ! ? ; : followed by space; a run longer than MAX_PIECE_WEIGHT is cut at
 * its last space within it (mid-word only when there is none). Control characters go (they cannot
 * travel in a WASI argument).
 */
export function splitSentences(text: string): string[] {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (!clean) return [];
  const out: string[] = [];
  for (const sentence of clean.split(/(?<=[.!?;:])\s+/)) {
    let rest = sentence.trim();
    for (let end = pieceEnd(rest); end < rest.length; end = pieceEnd(rest)) {
      const cut = rest.lastIndexOf(' ', end);
      const at = cut > 0 ? cut : end;
      out.push(rest.slice(0, at));
      rest = rest.slice(at).trim();
    }
    if (/[\p{L}\p{N}]/u.test(rest)) out.push(rest);
  }
  return out;
}

export function createLocalTts(opts: LocalTtsOptions = {}): TtsProvider {
  const defaultVoice = checkFliteVoice(opts.voice);
  const chunkMs = opts.chunkMs ?? 40;

  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    // The engine passes the agent's `model_name` as `model`: for `local` that names the voice too.
    const asked = req.voice || req.model;
    const voice = asked ? checkFliteVoice(asked) : defaultVoice;
    const pool = opts.pool ?? sharedFlitePool();
    const sentences = splitSentences(req.text);
    if (sentences.length === 0) return;
    // One sentence ahead: the next renders while this one is consumed. A piece whose Flite process
    // died (retryable) is rendered once more in a new one: one crash lost the rest of a long
    // greeting (the whole text is one request), though the same piece then rendered fine.
    const render = (i: number) => {
      const once = () => pool.render(sentences[i]!, voice, req.signal);
      const p = once().catch((err: unknown) => {
        if (err instanceof ProviderError && err.retryable && !req.signal.aborted) return once();
        throw err;
      });
      p.catch(() => {}); // observed when awaited; never an unhandled rejection if we stop early
      return p;
    };
    let next = render(0);
    for (let i = 0; i < sentences.length; i++) {
      const pcm = await next;
      if (i + 1 < sentences.length) next = render(i + 1);
      const step = Math.max(1, Math.round((pcm.sampleRateHz * chunkMs) / 1000));
      for (let at = 0; at < pcm.samples.length; at += step) {
        if (req.signal.aborted) throw abortedError('local');
        yield { samples: pcm.samples.slice(at, at + step), sampleRateHz: pcm.sampleRateHz };
      }
    }
  }

  return {
    label: 'local',
    capabilities: { streaming: true, sampleRatesHz: [16000] },
    synthesize: (req) => synthesize(req),
    // A cold worker costs ~200 ms (thread start, .wasm compile) on the first sentence.
    warm: async () => (opts.pool ?? sharedFlitePool()).warm(),
  };
}
