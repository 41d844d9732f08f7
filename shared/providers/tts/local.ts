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
import { FLITE_VOICES, MAX_SENTENCE_CHARS, sharedFlitePool, type FlitePool, type FliteVoice } from './flite-pool.js';

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
 * Sentences of at most `MAX_SENTENCE_CHARS`: cut after . ! ? ; : followed by space, a longer run
 * at its last space. Control characters go (they cannot travel in a WASI argument).
 */
export function splitSentences(text: string): string[] {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f]+/g, ' ').trim();
  if (!clean) return [];
  const out: string[] = [];
  for (const sentence of clean.split(/(?<=[.!?;:])\s+/)) {
    let rest = sentence.trim();
    while (rest.length > MAX_SENTENCE_CHARS) {
      const cut = rest.lastIndexOf(' ', MAX_SENTENCE_CHARS);
      const at = cut > 0 ? cut : MAX_SENTENCE_CHARS;
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
    // One sentence ahead: the next renders while this one is consumed.
    const render = (i: number) => {
      const p = pool.render(sentences[i]!, voice, req.signal);
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
