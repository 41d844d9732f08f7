/**
 * The ASR contract: the same assertions against any AsrProvider (sim, or a real adapter against
 * its fake / the vendor). The caller "speaks" sim-coded audio, so a provider that hears it must
 * return the phrase's text.
 */
import alawmulaw from 'alawmulaw';
import { describe, expect, it } from 'vitest';
import { encodeText, normalizeSimText } from '../../shared/providers/sim/codec.js';
import type { AsrEvent, AsrProvider, AsrStream } from '../../shared/providers/types.js';
import { collect } from '../unit/providers/adapters/helpers.js';

export interface AsrContractSetup {
  provider: AsrProvider;
  sampleRateHz: 8000 | 16000;
  encoding: 'linear16' | 'mulaw';
  phrase: string;
}

/** Pushes `text` as sim-coded speech in 20 ms frames, then `silenceMs` of silence. */
export function speak(stream: AsrStream, text: string, rate: 8000 | 16000, encoding: 'linear16' | 'mulaw', silenceMs = 600): number {
  const pcm = encodeText(text, rate);
  const all = new Int16Array(pcm.length + (rate * silenceMs) / 1000);
  all.set(pcm);
  const frame = rate / 50;
  let bytes = 0;
  for (let i = 0; i < all.length; i += frame) {
    const f = all.subarray(i, i + frame);
    const wire = encoding === 'mulaw' ? alawmulaw.mulaw.encode(f) : f;
    bytes += wire.byteLength;
    stream.push(wire);
  }
  return bytes;
}

export const finalText = (events: AsrEvent[]): string =>
  events
    .flatMap((e) => (e.type === 'final' && e.text ? [e.text] : []))
    .join(' ');

export function describeAsrContract(name: string, setup: () => AsrContractSetup | Promise<AsrContractSetup>): void {
  describe(`ASR contract: ${name}`, () => {
    it('hears a spoken phrase as a final with its text, and end() completes the stream', async () => {
      const s = await setup();
      const stream = s.provider.stream({ sampleRateHz: s.sampleRateHz, encoding: s.encoding });
      speak(stream, s.phrase, s.sampleRateHz, s.encoding);
      stream.end();
      const events = await collect(stream, 5000);
      expect(finalText(events)).toBe(normalizeSimText(s.phrase));
      expect(events.filter((e) => e.type === 'error')).toEqual([]);
      if (s.provider.capabilities.interim) {
        const firstInterim = events.findIndex((e) => e.type === 'interim');
        expect(firstInterim).toBeGreaterThanOrEqual(0);
        expect(firstInterim).toBeLessThan(events.findIndex((e) => e.type === 'final'));
      }
    });

    it('close() completes the stream and is idempotent', async () => {
      const s = await setup();
      const stream = s.provider.stream({ sampleRateHz: s.sampleRateHz, encoding: s.encoding });
      stream.close();
      stream.close();
      stream.push(new Int16Array(s.sampleRateHz / 50)); // ignored after close, must not throw
      const events = await collect(stream, 2000);
      expect(events.filter((e) => e.type === 'final')).toEqual([]);
    });
  });
}
