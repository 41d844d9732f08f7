import alawmulaw from 'alawmulaw';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { withTtsRetry } from '../../../../shared/providers/retry.js';
import { encodeText } from '../../../../shared/providers/sim/codec.js';
import { createElevenLabsTts, elevenLabsFormat } from '../../../../shared/providers/tts/elevenlabs.js';
import { MULAW_DECODE_TABLE, decodeMulaw } from '../../../../shared/providers/tts/pcm-bytes.js';
import { describeTtsContract } from '../../../contracts/tts.contract.js';
import { ElevenLabsFake } from '../../../fakes/elevenlabs.js';
import { collect, concatPcm, decodeSimPcm, settle, withTimeout } from './helpers.js';

const fake = new ElevenLabsFake();
const LONG = 'this is a much longer sentence so the stream has many chunks to abort';
const tts = (extra: { timeoutMs?: number } = {}) => createElevenLabsTts({ apiKey: fake.apiKey, baseUrl: fake.url, voice: 'voice-1', ...extra });
const req = (text: string, rate: number, signal = new AbortController().signal) => ({ text, preferredSampleRateHz: rate, signal });

beforeAll(() => fake.start());
afterAll(() => fake.close());
beforeEach(() => {
  fake.faults.clear();
  fake.chunkDelayMs = 0;
});

describeTtsContract('elevenlabs vs fake (8 kHz ulaw)', () => ({ provider: tts(), text: 'good morning', longText: LONG, preferredSampleRateHz: 8000, simCoded: true }));
describeTtsContract('elevenlabs vs fake (16 kHz pcm)', () => ({ provider: tts(), text: 'good morning', longText: LONG, preferredSampleRateHz: 16000, simCoded: true }));

describe('elevenlabs TTS adapter', () => {
  it('chooses output_format from the preferred rate', () => {
    expect([8000, 16000, 24000, 44100, 22050].map((r) => elevenLabsFormat(r).outputFormat)).toEqual([
      'ulaw_8000', 'pcm_16000', 'pcm_24000', 'pcm_16000', 'pcm_16000',
    ]);
  });

  it('the mu-law table matches alawmulaw sample for sample (exact carrier values)', () => {
    const all = Uint8Array.from({ length: 256 }, (_, i) => i);
    expect([...decodeMulaw(all)]).toEqual([...alawmulaw.mulaw.decode(all)]);
    expect([MULAW_DECODE_TABLE[0x80], MULAW_DECODE_TABLE[0x00], MULAW_DECODE_TABLE[0xff]]).toEqual([32124, -32124, 0]);
  });

  it.each([
    [8000, 'ulaw_8000'],
    [16000, 'pcm_16000'],
    [24000, 'pcm_24000'],
  ])('at %i Hz asks for %s and the text round-trips', async (rate, format) => {
    const chunks = await collect(tts().synthesize(req('Table for two at eight', rate)));
    expect(chunks.every((c) => c.sampleRateHz === rate)).toBe(true);
    expect(decodeSimPcm(concatPcm(chunks), rate)).toBe('table for two at eight');
    const rec = fake.requests.at(-1)!;
    expect(rec.path).toBe('/v1/text-to-speech/voice-1/stream');
    expect(rec.query.get('output_format')).toBe(format);
    expect(rec.headers['xi-api-key']).toBe(fake.apiKey);
    expect(rec.body).toMatchObject({ text: 'Table for two at eight', model_id: 'eleven_flash_v2_5' });
  });

  it('ulaw_8000 yields exactly the decoded carrier samples (no resampling)', async () => {
    const chunks = await collect(tts().synthesize(req('abc', 8000)));
    const expected = alawmulaw.mulaw.decode(alawmulaw.mulaw.encode(encodeText('abc', 8000)));
    expect(concatPcm(chunks)).toEqual(expected);
  });

  it('slow first byte: FIRST_BYTE_TIMEOUT', async () => {
    fake.faults.once({ slowFirstByteMs: 600 });
    const { error } = await settle(tts({ timeoutMs: 100 }).synthesize(req('hi', 16000)));
    expect(error.code).toBe('FIRST_BYTE_TIMEOUT');
  });

  it('mid-stream disconnect: STREAM_INTERRUPTED after the first chunk', async () => {
    fake.faults.once({ disconnectMidStream: true });
    const { items, error } = await settle(tts().synthesize(req(LONG, 16000)));
    expect(items.length).toBeGreaterThan(0);
    expect(error.code).toBe('STREAM_INTERRUPTED');
  });

  it('429 + Retry-After honoured by withTtsRetry', async () => {
    fake.faults.once({ status429RetryAfterS: 1 });
    const retries: Array<[number, number]> = [];
    const chunks = await collect(withTtsRetry(tts(), { onRetry: (a, ms) => retries.push([a, ms]) }).synthesize(req('ok', 16000)));
    expect(chunks.length).toBeGreaterThan(0);
    expect(retries).toEqual([[1, 1000]]);
  });

  it('500 then success: one retry, audio intact', async () => {
    fake.faults.once({ status500: true });
    const retries: number[] = [];
    const chunks = await collect(withTtsRetry(tts(), { baseBackoffMs: 5, onRetry: (a) => retries.push(a) }).synthesize(req('ok', 16000)));
    expect(decodeSimPcm(concatPcm(chunks), 16000)).toBe('ok');
    expect(retries).toEqual([1]);
  });

  it('abort mid-stream closes the request at the fake', async () => {
    fake.chunkDelayMs = 20;
    const ac = new AbortController();
    const it = tts().synthesize(req(LONG, 16000, ac.signal))[Symbol.asyncIterator]();
    expect((await it.next()).done).toBe(false);
    ac.abort();
    await expect(it.next()).rejects.toMatchObject({ code: 'ABORTED' });
    const rec = fake.requests.at(-1)!;
    await withTimeout(rec.closed, 2000, 'fake saw close');
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('wrong key: AUTH_FAILED with the vendor status, not retried by the decorator', async () => {
    const before = fake.requests.length;
    const p = withTtsRetry(createElevenLabsTts({ apiKey: 'bad-eleven-key-7', baseUrl: fake.url }));
    const { error } = await settle(p.synthesize(req('hi', 16000)));
    expect(error).toMatchObject({ code: 'AUTH_FAILED', status: 401, vendorCode: 'invalid_api_key' });
    expect((error as Error).message).not.toContain('bad-eleven-key-7');
    expect((error as Error).message).toContain('[redacted]');
    expect(fake.requests.length - before).toBe(1);
  });
});
