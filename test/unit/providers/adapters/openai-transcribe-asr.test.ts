/**
 * The OpenAI-compatible transcription ASR against a fake speaking the same wire protocol
 * (multipart WAV upload -> `{text}`); the fake reads the sim audio code in the WAV, so what it
 * "transcribes" is what the caller said.
 */
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { realClock } from '../../../../shared/clock.js';
import { createOutboundClient } from '../../../../shared/outbound/index.js';
import { createOpenAiTranscribeAsr, multipartBody } from '../../../../shared/providers/asr/openai-transcribe.js';
import { createProviders, resolveProviderConfig } from '../../../../shared/providers/registry.js';
import type { AsrEvent } from '../../../../shared/providers/types.js';
import { describeAsrContract, finalText, speak } from '../../../contracts/asr.contract.js';
import { OpenAiFake } from '../../../fakes/openai.js';
import { collect } from './helpers.js';

const outbound = createOutboundClient({ allowCidrs: ['127.0.0.0/8'] });
const fake = new OpenAiFake({ apiKey: 'asr-key' });
beforeAll(() => fake.start());
afterAll(async () => {
  await fake.close();
  await outbound.close();
});
beforeEach(() => {
  fake.faults.clear();
  fake.transcript = undefined;
});

const asr = (over: Partial<Parameters<typeof createOpenAiTranscribeAsr>[0]> = {}) =>
  createOpenAiTranscribeAsr({ apiKey: 'asr-key', baseUrl: `${fake.url}/v1`, model: 'whisper-1', clock: realClock, outbound, baseBackoffMs: 10, ...over });
const code = (e: AsrEvent) => (e as { code?: string }).code;

describeAsrContract('openai transcription vs fake (16 kHz linear16)', () => ({ provider: asr(), sampleRateHz: 16000, encoding: 'linear16', phrase: 'Book a table' }));
describeAsrContract('openai transcription vs fake (8 kHz mulaw)', () => ({ provider: asr(), sampleRateHz: 8000, encoding: 'mulaw', phrase: 'Book a table' }));

describe('openai transcription ASR', () => {
  it('uploads one WAV per utterance with model, language and json format, bearer key', async () => {
    const before = fake.uploads.length;
    const stream = asr({ label: 'groq' }).stream({ sampleRateHz: 16000, encoding: 'linear16', language: 'en-US' });
    speak(stream, 'first thing', 16000, 'linear16');
    stream.flush();
    speak(stream, 'second thing', 16000, 'linear16');
    stream.end();
    const events = await collect(stream, 5000);
    expect(events.filter((e) => e.type === 'final')).toEqual([
      { type: 'final', text: 'first thing', endOfTurn: true },
      { type: 'final', text: 'second thing', endOfTurn: true },
    ]);
    const ups = fake.uploads.slice(before);
    expect(ups.map((u) => u.fields)).toEqual([0, 1].map(() => ({ model: 'whisper-1', response_format: 'json', language: 'en' })));
    expect(ups[0]).toMatchObject({ filename: 'audio.wav', contentType: 'audio/wav', sampleRateHz: 16000 });
    // Silence before the phrase is not uploaded beyond the 300 ms pre-roll.
    expect(ups[0]!.samples / 16000).toBeLessThan(0.3 + 0.02 + 2.5 + 0.6);
    expect(fake.requests.at(-1)!.headers.authorization).toBe('Bearer asr-key');
  });

  it('silence only: no request at all', async () => {
    const before = fake.requests.length;
    const stream = asr().stream({ sampleRateHz: 8000, encoding: 'linear16' });
    for (let i = 0; i < 100; i++) stream.push(new Int16Array(160));
    stream.flush();
    stream.end();
    expect(await collect(stream, 2000)).toEqual([]);
    expect(fake.requests.length).toBe(before);
  });

  it('maps errors: 401 is a non-recoverable AUTH_FAILED; one 500 is retried; 429 surfaces RATE_LIMITED', async () => {
    const bad = asr({ apiKey: 'wrong' }).stream({ sampleRateHz: 16000, encoding: 'linear16' });
    speak(bad, 'hello', 16000, 'linear16');
    bad.end();
    const badEvents = await collect(bad, 5000);
    expect(badEvents.map((e) => [e.type, code(e), e.type === 'error' && e.recoverable])).toEqual([['error', 'AUTH_FAILED', false]]);

    fake.faults.once({ status500: true });
    const n = fake.requests.length;
    const retried = asr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    speak(retried, 'hello', 16000, 'linear16');
    retried.end();
    expect(finalText(await collect(retried, 5000))).toBe('hello');
    expect(fake.requests.length - n).toBe(2);

    fake.faults.always({ status429RetryAfterS: 60 });
    const limited = asr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    speak(limited, 'hello', 16000, 'linear16');
    limited.end();
    const ev = await collect(limited, 5000);
    expect(ev.map((e) => [e.type, code(e), e.type === 'error' && e.recoverable])).toEqual([['error', 'RATE_LIMITED', true]]);
  });

  it('a base_url the outbound policy refuses never receives a byte', async () => {
    const strict = createOutboundClient({});
    try {
      const n = fake.requests.length;
      const stream = asr({ outbound: strict }).stream({ sampleRateHz: 16000, encoding: 'linear16' });
      speak(stream, 'hello', 16000, 'linear16');
      stream.end();
      const ev = await collect(stream, 5000);
      expect(ev.map((e) => [e.type, code(e)])).toEqual([['error', 'OUTBOUND_REFUSED']]);
      expect(fake.requests.length).toBe(n);
    } finally {
      await strict.close();
    }
  });

  it('close() aborts the request in flight', async () => {
    fake.faults.once({ slowFirstByteMs: 2000 });
    const stream = asr().stream({ sampleRateHz: 16000, encoding: 'linear16' });
    speak(stream, 'hello', 16000, 'linear16');
    stream.flush();
    await new Promise((r) => setTimeout(r, 100));
    stream.close();
    expect(await collect(stream, 1000)).toEqual([]);
    const rec = fake.requests.at(-1)!;
    await rec.closed;
    expect(rec.clientClosedEarly).toBe(true);
  });

  it('registry: openai and groq need a key, openai_compatible a base_url; built through the registry', () => {
    expect(() => resolveProviderConfig('asr', { provider_name: 'openai_compatible' })).toThrow(expect.objectContaining({ code: 'MISSING_BASE_URL' }));
    expect(resolveProviderConfig('asr', { provider_name: 'groq', api_key: 'k' })).toMatchObject({ baseUrl: 'https://api.groq.com/openai/v1', model: 'whisper-large-v3-turbo' });
    const { asr: a } = createProviders({ asr: { provider_name: 'openai_compatible', base_url: 'http://127.0.0.1:8000/v1' } }, { clock: realClock, outbound });
    expect(a).toMatchObject({ label: 'openai_compatible', capabilities: { interim: false, acceptsMulaw: false } });
  });

  it('multipart body: fields then the file, CRLF framing, closing boundary', () => {
    const body = Buffer.from(multipartBody({ model: 'm' }, new Uint8Array([1, 2]), 'B')).toString('latin1');
    expect(body).toBe('--B\r\nContent-Disposition: form-data; name="model"\r\n\r\nm\r\n--B\r\nContent-Disposition: form-data; name="file"; filename="audio.wav"\r\nContent-Type: audio/wav\r\n\r\n\x01\x02\r\n--B--\r\n');
  });
});
