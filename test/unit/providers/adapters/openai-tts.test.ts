import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withTtsRetry } from '../../../../shared/providers/retry.js';
import { probeWav, S16leAssembler } from '../../../../shared/providers/tts/pcm-bytes.js';
import { encodeText } from '../../../../shared/providers/sim/codec.js';
import { createOpenAiTts, type OpenAiTtsOptions } from '../../../../shared/providers/tts/openai.js';
import { describeTtsContract } from '../../../contracts/tts.contract.js';
import { OpenAiFake } from '../../../fakes/openai.js';
import { collect, concatPcm, decodeSimPcm, settle, withTimeout } from './helpers.js';

const fake = new OpenAiFake();
const LONG = 'this is a much longer sentence so the stream has many chunks to abort';
const tts = (extra: Partial<OpenAiTtsOptions> = {}) => createOpenAiTts({ apiKey: fake.apiKey, baseUrl: `${fake.url}/v1`, ...extra });
const req = (text: string, signal = new AbortController().signal) => ({ text, preferredSampleRateHz: 8000, signal });

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.chunkDelayMs = 0;
});

describeTtsContract('openai tts vs fake', () => ({ provider: tts(), text: 'Hello there', longText: LONG, preferredSampleRateHz: 8000, simCoded: true }));

describe('S16leAssembler', () => {
  it('reassembles samples split at odd byte boundaries', () => {
    const a = new S16leAssembler();
    // 0x1234, -2 (0xfffe), 0x7fff in LE, split 1 / 3 / 2 bytes
    const parts = [a.push(Uint8Array.of(0x34)), a.push(Uint8Array.of(0x12, 0xfe, 0xff)), a.push(Uint8Array.of(0xff, 0x7f))];
    expect(parts.map((p) => [...p])).toEqual([[], [0x1234, -2], [0x7fff]]);
    expect(a.pendingByte).toBe(false);
  });
});

describe('a WAV body where raw PCM was asked (OpenAI-compatible servers)', () => {
  const wavFake = new OpenAiFake({ speechWavRateHz: 16000, speechChunkBytes: 33 });
  beforeAll(() => wavFake.start());
  afterAll(() => wavFake.close());

  it('skips the header (split over chunks, a LIST chunk before data) and uses its rate: no click, the text decodes', async () => {
    const chunks = await collect(createOpenAiTts({ apiKey: wavFake.apiKey, baseUrl: `${wavFake.url}/v1` }).synthesize(req('Book a table for two')));
    expect(chunks.every((c) => c.sampleRateHz === 16000)).toBe(true);
    const pcm = concatPcm(chunks);
    expect(decodeSimPcm(pcm, 16000)).toBe('book a table for two');
    // The first samples are the phrase's first samples, not header bytes read as audio.
    expect(Array.from(pcm.subarray(0, 8))).toEqual(Array.from(encodeText('Book a table for two', 16000).subarray(0, 8)));
  });

  it('probeWav: raw PCM, a WAV header, one still arriving, and a WAV that is not 16-bit mono', () => {
    expect(probeWav(Uint8Array.of(1, 2, 3, 4, 5))).toEqual({ kind: 'raw' });
    expect(probeWav(new TextEncoder().encode('RIFF'))).toEqual({ kind: 'need_more' });
    const header = (bits: number, channels: number) => {
      const b = Buffer.alloc(44);
      b.write('RIFF', 0, 'latin1');
      b.write('WAVEfmt ', 8, 'latin1');
      b.writeUInt32LE(16, 16);
      b.writeUInt16LE(1, 20);
      b.writeUInt16LE(channels, 22);
      b.writeUInt32LE(22050, 24);
      b.writeUInt16LE(bits, 34);
      b.write('data', 36, 'latin1');
      return new Uint8Array(b);
    };
    expect(probeWav(header(16, 1))).toEqual({ kind: 'wav', dataOffset: 44, sampleRateHz: 22050 });
    expect(probeWav(header(8, 1)).kind).toBe('unsupported');
    expect(probeWav(header(16, 2)).kind).toBe('unsupported');
  });
});

describe('openai TTS adapter', () => {
  it('POSTs /audio/speech for pcm and yields 24 kHz audio that decodes back to the text (odd chunk splits)', async () => {
    const chunks = await collect(tts().synthesize(req('Book a table for two')));
    expect(chunks.every((c) => c.sampleRateHz === 24000)).toBe(true);
    expect(decodeSimPcm(concatPcm(chunks), 24000)).toBe('book a table for two');
    const rec = fake.requests.at(-1)!;
    expect(rec.path).toBe('/v1/audio/speech');
    expect(rec.body).toEqual({ model: 'gpt-4o-mini-tts', input: 'Book a table for two', voice: 'alloy', response_format: 'pcm' });
  });

  it('slow first byte: FIRST_BYTE_TIMEOUT and the request is closed', async () => {
    fake.faults.once({ slowFirstByteMs: 600 });
    const { error } = await settle(tts({ timeoutMs: 100 }).synthesize(req('hi')));
    expect(error.code).toBe('FIRST_BYTE_TIMEOUT');
    await withTimeout(fake.requests.at(-1)!.closed, 2000, 'fake saw close');
  });

  it('mid-stream disconnect: audio so far, then STREAM_INTERRUPTED', async () => {
    fake.faults.once({ disconnectMidStream: true });
    const { items, error } = await settle(tts().synthesize(req(LONG)));
    expect(items.length).toBeGreaterThan(0);
    expect(error.code).toBe('STREAM_INTERRUPTED');
  });

  it('429 + Retry-After through withTtsRetry: one retry after the vendor-given wait', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const retries: Array<[number, number]> = [];
    const p = withTtsRetry(tts(), { onRetry: (a, ms) => retries.push([a, ms]) });
    const before = fake.requests.length;
    const chunks = await collect(p.synthesize(req('ok')));
    expect(decodeSimPcm(concatPcm(chunks), 24000)).toBe('ok');
    expect(retries).toEqual([[1, 1000]]);
    const [a, b] = fake.requests.slice(before);
    expect(b!.atMs - a!.atMs).toBeGreaterThanOrEqual(950);
  });

  it('500 through withTtsRetry: 3 attempts, then exhausted', async () => {
    fake.faults.always({ status500: true });
    const exhausted: number[] = [];
    const p = withTtsRetry(tts(), { baseBackoffMs: 5, onExhausted: (a) => exhausted.push(a) });
    const before = fake.requests.length;
    const { error } = await settle(p.synthesize(req('ok')));
    expect(error).toMatchObject({ code: 'UPSTREAM_UNAVAILABLE', status: 500 });
    expect(exhausted).toEqual([3]);
    expect(fake.requests.length - before).toBe(3);
  });

  it('abort mid-stream closes the request at the fake', async () => {
    fake.chunkDelayMs = 20;
    const ac = new AbortController();
    const it = tts().synthesize(req(LONG, ac.signal))[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'ABORTED' });
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });
});
