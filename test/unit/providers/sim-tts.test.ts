import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { encodeText } from '../../../shared/providers/sim/codec.js';
import { createSimTts } from '../../../shared/providers/tts/sim.js';
import type { PcmChunk, TtsRequest } from '../../../shared/providers/types.js';

function request(text: string, preferredSampleRateHz: number, signal = new AbortController().signal): TtsRequest {
  return { text, preferredSampleRateHz, signal };
}
async function collect(stream: AsyncIterable<PcmChunk>): Promise<PcmChunk[]> {
  const chunks: PcmChunk[] = [];
  for await (const c of stream) chunks.push(c);
  return chunks;
}
function concat(chunks: PcmChunk[]): Int16Array {
  const out = new Int16Array(chunks.reduce((n, c) => n + c.samples.length, 0));
  let at = 0;
  for (const c of chunks) {
    out.set(c.samples, at);
    at += c.samples.length;
  }
  return out;
}
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('sim TTS', () => {
  it('streams the encoded text in chunkMs chunks at the preferred rate when supported', async () => {
    const tts = createSimTts();
    expect(tts.label).toBe('sim');
    expect(tts.capabilities.sampleRatesHz).toEqual([8000, 16000, 24000]);
    for (const rateHz of [8000, 16000, 24000] as const) {
      const chunks = await collect(tts.synthesize(request('Hello there.', rateHz)));
      expect(chunks.every((c) => c.sampleRateHz === rateHz)).toBe(true);
      expect(chunks.slice(0, -1).every((c) => c.samples.length === (rateHz * 40) / 1000)).toBe(true);
      expect(concat(chunks)).toEqual(encodeText('Hello there.', rateHz));
    }
    expect(tts.requestCount).toBe(3);
  });

  it('falls back to its own rate for unsupported preferences; honours chunkMs', async () => {
    const chunks = await collect(createSimTts({ chunkMs: 20, sampleRateHz: 24000 }).synthesize(request('hi', 44100)));
    expect(chunks[0]).toMatchObject({ sampleRateHz: 24000 });
    expect(chunks[0]!.samples).toHaveLength(480);
    const byDefault = await collect(createSimTts().synthesize(request('hi', 48000)));
    expect(byDefault[0]!.sampleRateHz).toBe(16000);
  });

  it('yields nothing for text with nothing to say', async () => {
    expect(await collect(createSimTts().synthesize(request('  ##  ', 16000)))).toEqual([]);
  });

  it('hands out independent buffers', async () => {
    const chunks = await collect(createSimTts().synthesize(request('abc', 16000)));
    expect(new Set(chunks.map((c) => c.samples.buffer)).size).toBe(chunks.length);
  });

  it('waits ttfbMs for the first chunk, then sends the rest without pacing', async () => {
    const clock = new SimulatedClock();
    const tts = createSimTts({ ttfbMs: 200, clock });
    const seen: PcmChunk[] = [];
    const done = (async () => {
      for await (const c of tts.synthesize(request('pace me', 16000))) seen.push(c);
    })();
    clock.advance(199);
    await settle();
    expect(seen).toHaveLength(0);
    clock.advance(1);
    await done;
    expect(concat(seen)).toEqual(encodeText('pace me', 16000));
  });

  it('rejects with an AbortError on abort during the first-byte wait and mid-stream', async () => {
    const clock = new SimulatedClock();
    const tts = createSimTts({ ttfbMs: 500, clock });
    const waiting = new AbortController();
    const first = collect(tts.synthesize(request('hello', 16000, waiting.signal)));
    await settle();
    waiting.abort();
    await expect(first).rejects.toMatchObject({ name: 'AbortError' });
    expect(clock.pendingTimers).toBe(0);

    const streaming = new AbortController();
    const iterator = createSimTts().synthesize(request('hello', 16000, streaming.signal))[Symbol.asyncIterator]();
    expect((await iterator.next()).done).toBe(false);
    streaming.abort();
    await expect(iterator.next()).rejects.toMatchObject({ name: 'AbortError' });

    const already = new AbortController();
    already.abort();
    await expect(collect(tts.synthesize(request('hello', 16000, already.signal)))).rejects.toMatchObject({ name: 'AbortError' });
  });
});
