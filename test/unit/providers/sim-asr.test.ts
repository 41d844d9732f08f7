/** Sim ASR through the AsrStream interface, fed by sim TTS (and sim LLM) end to end. */
import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { mulawEncode } from '../../../media-engine/audio/g711.js';
import { Resampler } from '../../../media-engine/audio/resampler.js';
import { createSimAsr } from '../../../shared/providers/asr/sim.js';
import { createSimLlm, simDemoScript } from '../../../shared/providers/llm/sim.js';
import { encodeText, normalizeSimText, symbolDurationMs } from '../../../shared/providers/sim/codec.js';
import { createSimTts } from '../../../shared/providers/tts/sim.js';
import type { AsrEvent, AsrStream } from '../../../shared/providers/types.js';

const never = new AbortController().signal;

/** Sim TTS output for `text`, cut into 20 ms frames as a transport delivers it. */
async function speak(text: string, rateHz: 8000 | 16000): Promise<Int16Array[]> {
  const frames: Int16Array[] = [];
  const frameSamples = rateHz / 50;
  let pending: number[] = [];
  for await (const chunk of createSimTts({ chunkMs: 35 }).synthesize({ text, preferredSampleRateHz: rateHz, signal: never })) {
    pending.push(...chunk.samples);
    while (pending.length >= frameSamples) {
      frames.push(Int16Array.from(pending.slice(0, frameSamples)));
      pending = pending.slice(frameSamples);
    }
  }
  if (pending.length > 0) frames.push(Int16Array.from(pending));
  return frames;
}
async function drain(stream: AsrStream): Promise<AsrEvent[]> {
  const events: AsrEvent[] = [];
  for await (const e of stream) events.push(e);
  return events;
}
async function settle(): Promise<void> {
  for (let i = 0; i < 5; i++) await new Promise((resolve) => setImmediate(resolve));
}

describe('sim ASR', () => {
  it('turns sim TTS speech into growing interims and an end-of-turn final (16 kHz PCM)', async () => {
    const asr = createSimAsr();
    expect(asr.label).toBe('sim');
    expect(asr.capabilities).toEqual({ interim: true, acceptsMulaw: true, sampleRatesHz: [8000, 16000] });
    const stream = asr.stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const phrase = 'Table for 2 at 8:15, please!';
    for (const frame of await speak(phrase, 16000)) stream.push(frame);
    stream.end();
    const events = await drain(stream);
    const interims = events.filter((e) => e.type === 'interim');
    expect(interims.length).toBeGreaterThan(10);
    expect(events.at(-1)).toEqual({ type: 'final', text: normalizeSimText(phrase), endOfTurn: true });
    expect(asr.streamCount).toBe(1);
  });

  it('takes 8 kHz mu-law bytes, and 16-bit PCM as little-endian bytes', async () => {
    const phrase = 'my pin is 4-2-0-7';
    const mulaw = createSimAsr().stream({ sampleRateHz: 8000, encoding: 'mulaw' });
    for (const frame of await speak(phrase, 8000)) {
      const bytes = new Uint8Array(frame.length);
      mulawEncode(frame, bytes);
      mulaw.push(bytes);
    }
    mulaw.end();
    expect((await drain(mulaw)).filter((e) => e.type === 'final')).toEqual([{ type: 'final', text: phrase, endOfTurn: true }]);

    const bytesStream = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    for (const frame of await speak(phrase, 16000)) bytesStream.push(new Uint8Array(frame.buffer, frame.byteOffset, frame.byteLength));
    bytesStream.end();
    expect((await drain(bytesStream)).at(-1)).toEqual({ type: 'final', text: phrase, endOfTurn: true });
  });

  it('flush() forces a final of what is pending; end() completes after flushing', async () => {
    const stream = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const x = encodeText('abcdefghij', 16000);
    stream.push(x.subarray(0, (10 * symbolDurationMs * 16000) / 1000)); // preamble + 7 characters + a check
    stream.flush();
    stream.flush(); // nothing pending any more: no second final
    stream.end();
    const events = await drain(stream);
    expect(events.filter((e) => e.type === 'final')).toEqual([{ type: 'final', text: 'abcdefg', endOfTurn: true }]);
  });

  it('a stream given no audio ends cleanly; two live streams of one rate decode independently', async () => {
    // The decoder is made on the first frame and shares its rate's tables with every other one.
    const silent = createSimAsr().stream({ sampleRateHz: 8000, encoding: 'mulaw' });
    silent.flush();
    silent.end();
    expect(await drain(silent)).toEqual([]);
    // Two live streams fed frame by frame in turn: decoders sharing their tables do not interfere.
    const a = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const b = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const framesA = await speak('same tables', 16000);
    const framesB = await speak('other words', 16000);
    for (let i = 0; i < Math.max(framesA.length, framesB.length); i++) {
      if (framesA[i]) a.push(framesA[i]!);
      if (framesB[i]) b.push(framesB[i]!);
    }
    a.end();
    b.end();
    expect((await drain(a)).filter((e) => e.type === 'final')).toEqual([{ type: 'final', text: 'same tables', endOfTurn: true }]);
    expect((await drain(b)).filter((e) => e.type === 'final')).toEqual([{ type: 'final', text: 'other words', endOfTurn: true }]);
  });

  it('close() ends a waiting reader at once, drops pending events and is idempotent', async () => {
    const stream = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const reading = drain(stream);
    stream.push(encodeText('hello', 16000).subarray(0, 16000 * 0.3));
    await settle();
    stream.close();
    stream.close();
    const events = await reading;
    expect(events.every((e) => e.type === 'interim')).toBe(true);
    stream.push(encodeText('ignored', 16000));
    expect(await stream[Symbol.asyncIterator]().next()).toEqual({ value: undefined, done: true });
  });

  it('bounds its queue by dropping the oldest interims, never a final', async () => {
    const stream = createSimAsr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    const phrases = ['first long sentence with many characters', 'second long sentence, also long', 'third: 3'];
    for (const phrase of phrases) stream.push(encodeText(phrase, 16000)); // nobody reads meanwhile
    stream.end();
    const events = await drain(stream);
    expect(events.length).toBeLessThanOrEqual(32 + phrases.length);
    expect(events.filter((e) => e.type === 'final').map((e) => (e.type === 'final' ? e.text : ''))).toEqual(phrases);
    expect(events.at(-1)).toEqual({ type: 'final', text: 'third: 3', endOfTurn: true });
  });

  it('delays events by latencyMs on the injected clock; close() clears its timers', async () => {
    const clock = new SimulatedClock();
    const stream = createSimAsr({ latencyMs: 150, clock }).stream({ sampleRateHz: 8000, encoding: 'linear16' });
    const seen: AsrEvent[] = [];
    const reading = (async () => {
      for await (const e of stream) seen.push(e);
    })();
    stream.push(encodeText('hi', 8000));
    await settle();
    expect(seen).toHaveLength(0);
    clock.advance(150);
    await settle();
    expect(seen.at(-1)).toEqual({ type: 'final', text: 'hi', endOfTurn: true });
    stream.end();
    await reading;

    const closing = createSimAsr({ latencyMs: 150, clock }).stream({ sampleRateHz: 8000, encoding: 'linear16' });
    closing.push(encodeText('bye', 8000));
    expect(clock.pendingTimers).toBeGreaterThan(0);
    closing.close();
    expect(clock.pendingTimers).toBe(0);
  });

  it('end() waits for delayed events before completing', async () => {
    const clock = new SimulatedClock();
    const stream = createSimAsr({ latencyMs: 100, clock }).stream({ sampleRateHz: 16000, encoding: 'linear16' });
    stream.push(encodeText('late', 16000));
    stream.end();
    const reading = drain(stream);
    clock.advance(100);
    expect((await reading).at(-1)).toEqual({ type: 'final', text: 'late', endOfTurn: true });
  });

  it('rejects sample rates it cannot decode', () => {
    expect(() => createSimAsr().stream({ sampleRateHz: 24000, encoding: 'linear16' })).toThrow(RangeError);
  });

  it('hears an LLM reply spoken by sim TTS over a carrier leg (24 kHz -> 8 kHz mu-law)', async () => {
    const llm = createSimLlm({ script: simDemoScript });
    let reply = '';
    for await (const e of llm.stream({ messages: [{ role: 'user', content: 'bye now' }], tools: [], signal: never })) {
      if (e.type === 'text') reply += e.delta;
    }
    const tts = createSimTts({ sampleRateHz: 24000 });
    const to8k = new Resampler(24000, 8000);
    const stream = createSimAsr().stream({ sampleRateHz: 8000, encoding: 'mulaw' });
    for await (const chunk of tts.synthesize({ text: reply, preferredSampleRateHz: 24000, signal: never })) {
      const pcm8k = to8k.process(chunk.samples);
      const bytes = new Uint8Array(pcm8k.length);
      mulawEncode(pcm8k, bytes);
      stream.push(bytes);
    }
    stream.end();
    expect((await drain(stream)).at(-1)).toEqual({ type: 'final', text: 'thank you for calling. goodbye!', endOfTurn: true });
  });
});
