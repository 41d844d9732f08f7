/**
 * Wire-faithful fake of ElevenLabs HTTP streaming TTS:
 * `POST /v1/text-to-speech/{voice_id}/stream?output_format=pcm_16000|pcm_24000|ulaw_8000` with
 * `xi-api-key`. The body is raw audio (S16LE, or one mu-law byte per sample) in chunks, sim-coded
 * so the text can be read back. Errors use a FastAPI-style `{"detail":{"status","message"}}`
 * (the exact shape is [unverified], see docs/protocols.md).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import alawmulaw from 'alawmulaw';
import { encodeText } from '../../shared/providers/sim/codec.js';
import { int16ToBytes } from '../../shared/providers/tts/pcm-bytes.js';
import { delay } from './faults.js';
import { HttpFake, type HttpRecord } from './http-fake.js';

const FORMATS: Record<string, { rateHz: 8000 | 16000 | 24000; mulaw: boolean }> = {
  pcm_16000: { rateHz: 16000, mulaw: false },
  pcm_24000: { rateHz: 24000, mulaw: false },
  ulaw_8000: { rateHz: 8000, mulaw: true },
};

export class ElevenLabsFake extends HttpFake {
  readonly apiKey: string;
  /** Bytes per chunk; odd so S16LE samples split across chunks. */
  chunkBytes = 3333;

  constructor(opts: { apiKey?: string } = {}) {
    super();
    this.apiKey = opts.apiKey ?? 'test-elevenlabs-key';
  }

  protected async handle(rec: HttpRecord, _req: IncomingMessage, res: ServerResponse): Promise<void> {
    if (rec.headers['xi-api-key'] !== this.apiKey)
      return this.sendJson(rec, res, 401, { detail: { status: 'invalid_api_key', message: `Invalid API key: ${String(rec.headers['xi-api-key'] ?? '')}` } });
    const f = rec.faults;
    if (f.slowFirstByteMs) await delay(f.slowFirstByteMs);
    if (res.destroyed) return;
    if (f.status429RetryAfterS !== undefined)
      return this.sendJson(rec, res, 429, { detail: { status: 'too_many_concurrent_requests', message: 'Too many concurrent requests' } }, {
        'retry-after': String(f.status429RetryAfterS),
      });
    if (f.status500) return this.sendJson(rec, res, 500, { detail: { status: 'internal_error', message: 'Internal server error' } });
    const m = /^\/v1\/text-to-speech\/([^/]+)\/stream$/.exec(rec.path);
    if (rec.method !== 'POST' || !m) return this.sendJson(rec, res, 404, { detail: 'Not Found' });
    const format = FORMATS[rec.query.get('output_format') ?? 'mp3_44100_128'];
    if (!format) return this.sendJson(rec, res, 400, { detail: { status: 'invalid_output_format', message: 'the fake speaks pcm_16000, pcm_24000, ulaw_8000' } });
    const text = (rec.body as { text?: string } | undefined)?.text;
    if (!text) return this.sendJson(rec, res, 422, { detail: [{ loc: ['body', 'text'], msg: 'field required', type: 'value_error.missing' }] });

    const pcm = encodeText(text, format.rateHz);
    const audio = format.mulaw ? Buffer.from(alawmulaw.mulaw.encode(pcm)) : int16ToBytes(pcm);
    rec.status = 200;
    res.writeHead(200, { 'content-type': format.mulaw ? 'audio/basic' : 'audio/pcm' });
    for (let off = 0, n = 0; off < audio.length; off += this.chunkBytes, n++) {
      if (!this.write(res, audio.subarray(off, off + this.chunkBytes))) return;
      if (n === 0 && f.disconnectMidStream) {
        await delay(5);
        res.socket?.destroy();
        return;
      }
      await this.pause();
    }
    res.end();
  }
}
