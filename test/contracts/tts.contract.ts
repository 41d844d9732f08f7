/**
 * The TTS contract: the same assertions against any TtsProvider (sim, or a real adapter against
 * its fake / the vendor). With `simCoded`, the audio must decode back to the text, which proves
 * the bytes went through the real path (format choice, byte splitting, decoding) intact.
 */
import { describe, expect, it } from 'vitest';
import { normalizeSimText } from '../../shared/providers/sim/codec.js';
import type { PcmChunk, TtsProvider } from '../../shared/providers/types.js';
import { concatPcm, decodeSimPcm } from '../unit/providers/adapters/helpers.js';

export interface TtsContractSetup {
  provider: TtsProvider;
  text: string;
  /** Long enough to abort part-way through. */
  longText: string;
  preferredSampleRateHz: number;
  /** The provider's audio is sim-coded and must decode back to `text`. */
  simCoded: boolean;
}

const isAbortLike = (e: any): boolean => e?.code === 'ABORTED' || e?.name === 'AbortError';

async function drain(p: TtsProvider, text: string, rate: number, signal: AbortSignal, onChunk?: (c: PcmChunk) => void) {
  const chunks: PcmChunk[] = [];
  let error: any;
  try {
    for await (const c of p.synthesize({ text, preferredSampleRateHz: rate, signal })) {
      chunks.push(c);
      onChunk?.(c);
    }
  } catch (e) {
    error = e;
  }
  return { chunks, error };
}

export function describeTtsContract(name: string, setup: () => TtsContractSetup | Promise<TtsContractSetup>): void {
  describe(`TTS contract: ${name}`, () => {
    it('streams non-empty PCM chunks at one declared rate (and the text survives, when sim-coded)', async () => {
      const s = await setup();
      const { chunks, error } = await drain(s.provider, s.text, s.preferredSampleRateHz, new AbortController().signal);
      expect(error).toBeUndefined();
      expect(chunks.length).toBeGreaterThan(0);
      const rates = new Set(chunks.map((c) => c.sampleRateHz));
      expect(rates.size).toBe(1);
      expect(s.provider.capabilities.sampleRatesHz).toContain([...rates][0]);
      for (const c of chunks) expect(c.samples.length).toBeGreaterThan(0);
      if (s.simCoded) expect(decodeSimPcm(concatPcm(chunks), chunks[0]!.sampleRateHz)).toBe(normalizeSimText(s.text));
    });

    it('stops promptly when the signal aborts after the first chunk', async () => {
      const s = await setup();
      const ac = new AbortController();
      let afterAbort = 0;
      const started = performance.now();
      const { error } = await drain(s.provider, s.longText, s.preferredSampleRateHz, ac.signal, () => {
        if (ac.signal.aborted) afterAbort++;
        else ac.abort();
      });
      expect(performance.now() - started).toBeLessThan(3000);
      expect(error === undefined || isAbortLike(error)).toBe(true);
      expect(afterAbort).toBeLessThan(5);
    });

    it('a consumer that breaks early is not left hanging', async () => {
      const s = await setup();
      const started = performance.now();
      for await (const c of s.provider.synthesize({ text: s.longText, preferredSampleRateHz: s.preferredSampleRateHz, signal: new AbortController().signal })) {
        expect(c.samples.length).toBeGreaterThan(0);
        break;
      }
      expect(performance.now() - started).toBeLessThan(3000);
    });

    it('empty text yields no audio and no error', async () => {
      const s = await setup();
      const { chunks, error } = await drain(s.provider, '   ', s.preferredSampleRateHz, new AbortController().signal);
      expect(error).toBeUndefined();
      expect(chunks).toHaveLength(0);
    });
  });
}
