/**
 * OpenAI-compatible transcription ASR: `POST {baseUrl}/audio/transcriptions` (multipart: `file` a
 * WAV, `model`, optional `language`, `response_format=json` -> `{text}`), as served by OpenAI,
 * Groq, faster-whisper-server, whisper.cpp's server and vLLM. Not streaming: the engine's own
 * endpointing cuts the utterance. When the caller stops (the engine's silence endpoint calls
 * `flush()`), the audio since the last cut goes out as one WAV and the text comes back as a
 * `final` with `endOfTurn`. No interim results, so a barge-in cannot be confirmed by this ASR
 * (docs/providers.md).
 *
 * Bounds: audio held is at most `maxUtteranceMs` (oldest dropped); before any voiced frame only a
 * `preRollMs` pre-roll is kept (silence is not uploaded); at most `maxQueued` utterances wait
 * behind the one in flight (oldest dropped, with an `error` event); responses read to 1 MiB.
 */
import { randomUUID } from 'node:crypto';
import { describeJsonError, httpStreamSettings, openHttpStream, type HttpAdapterDefaults, type HttpAdapterOptions } from '../http.js';
import { encodeWav } from '../audio/wav.js';
import { ProviderError } from '../errors.js';
import { MULAW_DECODE_TABLE } from '../tts/pcm-bytes.js';
import type { AsrEvent, AsrProvider, AsrStream, AsrStreamOptions } from '../types.js';
import { DEFAULT_VOICED_RMS, rms } from '../audio/level.js';

export interface OpenAiTranscribeOptions extends HttpAdapterOptions {
  /** Empty: no Authorization header (self-hosted servers). */
  apiKey: string;
  /** Default `https://api.openai.com/v1`; `/audio/transcriptions` is appended. */
  baseUrl?: string;
  /** Default `whisper-1`. */
  model?: string;
  /** ISO-639-1 (`en`) or a tag (`en-US`, cut to `en`). Default: not sent (the server detects). */
  language?: string;
  /** Registry name for errors and logs (`openai`, `groq`, `openai_compatible`). */
  label?: string;
  /** Longest utterance uploaded; older audio is dropped. Default 30 000. */
  maxUtteranceMs?: number;
  /** Audio kept before the first voiced frame. Default 300. */
  preRollMs?: number;
  /** Frame RMS that counts as voiced (int16 units; ~-40 dBFS). Default 300. */
  voicedRms?: number;
  /** Utterances waiting behind the one being transcribed. Default 2. */
  maxQueued?: number;
}

/** One utterance is one request; a slow transcription is still worth waiting for (the engine's endpoint wait is separate). */
export const TRANSCRIBE_HTTP_DEFAULTS: HttpAdapterDefaults = { timeoutMs: 15_000, idleTimeoutMs: 15_000, maxRetries: 1, baseBackoffMs: 250, maxRetryAfterMs: 5_000 };
const MAX_RESPONSE_BYTES = 1024 * 1024;

export function createOpenAiTranscribeAsr(opts: OpenAiTranscribeOptions): AsrProvider {
  const label = opts.label ?? 'openai';
  return {
    label,
    capabilities: { interim: false, acceptsMulaw: false, sampleRatesHz: [16000, 8000] },
    stream: (s) => new TranscribeStream(opts, label, s),
  };
}

/** `multipart/form-data` body: text fields, then the WAV as `file`. */
export function multipartBody(fields: Record<string, string>, wav: Uint8Array, boundary: string): Uint8Array {
  const parts: Buffer[] = [];
  for (const [k, v] of Object.entries(fields)) parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="${k}"\r\n\r\n${v}\r\n`));
  parts.push(Buffer.from(`--${boundary}\r\nContent-Disposition: form-data; name="file"; filename="audio.wav"\r\nContent-Type: audio/wav\r\n\r\n`));
  parts.push(Buffer.from(wav.buffer, wav.byteOffset, wav.byteLength));
  parts.push(Buffer.from(`\r\n--${boundary}--\r\n`));
  return new Uint8Array(Buffer.concat(parts));
}

type Waiter = (r: IteratorResult<AsrEvent>) => void;

class TranscribeStream implements AsrStream {
  private readonly rateHz: number;
  private readonly mulaw: boolean;
  private readonly maxSamples: number;
  private readonly preRollSamples: number;
  /** The utterance so far, as frames (copies). */
  private frames: Int16Array[] = [];
  private samples = 0;
  private voiced = false;
  private readonly pending: Int16Array[] = [];
  private inFlight?: AbortController;
  private readonly events: AsrEvent[] = [];
  private readonly waiters: Waiter[] = [];
  private state: 'open' | 'ending' | 'closed' = 'open';

  constructor(
    private readonly o: OpenAiTranscribeOptions,
    private readonly label: string,
    s: AsrStreamOptions,
  ) {
    if (s.sampleRateHz !== 8000 && s.sampleRateHz !== 16000) throw new RangeError(`${label} transcription: unsupported rate ${s.sampleRateHz} Hz (8000 or 16000)`);
    this.rateHz = s.sampleRateHz;
    this.mulaw = s.encoding === 'mulaw';
    this.maxSamples = Math.round(((o.maxUtteranceMs ?? 30_000) * this.rateHz) / 1000);
    this.preRollSamples = Math.round(((o.preRollMs ?? 300) * this.rateHz) / 1000);
    if (s.language && !o.language) this.o = { ...o, language: s.language };
    if (s.model && !o.model) this.o = { ...this.o, model: s.model };
  }

  push(frame: Int16Array | Uint8Array): void {
    if (this.state !== 'open') return;
    let pcm: Int16Array;
    if (frame instanceof Int16Array) pcm = frame.slice();
    else if (this.mulaw) pcm = Int16Array.from(frame, (b) => MULAW_DECODE_TABLE[b]!);
    else pcm = new Int16Array(frame.buffer.slice(frame.byteOffset, frame.byteOffset + (frame.byteLength & ~1)));
    if (!this.voiced && rms(pcm) >= (this.o.voicedRms ?? DEFAULT_VOICED_RMS)) this.voiced = true;
    this.frames.push(pcm);
    this.samples += pcm.length;
    // Overflow policy: drop the oldest audio (the pre-roll before speech; the start of a very long utterance).
    const cap = this.voiced ? this.maxSamples : this.preRollSamples;
    while (this.frames.length > 1 && this.samples - this.frames[0]!.length >= cap) this.samples -= this.frames.shift()!.length;
  }

  /** The engine's endpoint: what was said since the last cut is transcribed. */
  flush(): void {
    if (this.state !== 'open') return;
    this.cut();
  }

  end(): void {
    if (this.state !== 'open') return;
    this.cut();
    this.state = 'ending';
    this.settle();
  }

  close(): void {
    if (this.state === 'closed') return;
    this.state = 'closed';
    this.inFlight?.abort();
    this.pending.length = 0;
    this.frames = [];
    this.events.length = 0;
    this.settle();
  }

  [Symbol.asyncIterator](): AsyncIterator<AsrEvent> {
    return {
      next: () => {
        const ev = this.events.shift();
        if (ev) return Promise.resolve({ value: ev, done: false });
        if (this.done()) return Promise.resolve({ value: undefined, done: true });
        return new Promise((resolve) => this.waiters.push(resolve));
      },
      return: () => {
        this.close();
        return Promise.resolve({ value: undefined, done: true });
      },
    };
  }

  private cut(): void {
    if (!this.voiced) return; // nothing but silence: no request
    const utterance = new Int16Array(this.samples);
    let at = 0;
    for (const f of this.frames) {
      utterance.set(f, at);
      at += f.length;
    }
    this.frames = [];
    this.samples = 0;
    this.voiced = false;
    this.pending.push(utterance);
    if (this.pending.length > (this.o.maxQueued ?? 2)) {
      this.pending.shift();
      this.emit({ type: 'error', message: `${this.label}: transcription backlog, oldest utterance dropped`, recoverable: true });
    }
    this.pump();
  }

  private pump(): void {
    if (this.inFlight || this.state === 'closed') return;
    const utterance = this.pending.shift();
    if (!utterance) return this.settle();
    const ac = new AbortController();
    this.inFlight = ac;
    void this.transcribe(utterance, ac.signal)
      .then((text) => {
        if (text) this.emit({ type: 'final', text, endOfTurn: true });
      })
      .catch((err: unknown) => {
        if (ac.signal.aborted) return;
        const e = err instanceof ProviderError ? err : undefined;
        const ev = { type: 'error' as const, message: (err as Error).message, recoverable: e?.retryable ?? false, code: e?.code ?? 'VENDOR_ERROR' };
        this.emit(ev);
      })
      .finally(() => {
        this.inFlight = undefined;
        this.pump();
      });
  }

  private async transcribe(samples: Int16Array, signal: AbortSignal): Promise<string> {
    const boundary = `vp-${randomUUID()}`;
    const fields: Record<string, string> = { model: this.o.model || 'whisper-1', response_format: 'json' };
    const lang = this.o.language?.trim().toLowerCase().split(/[-_]/)[0];
    if (lang && /^[a-z]{2,3}$/.test(lang)) fields.language = lang;
    const headers: Record<string, string> = { 'content-type': `multipart/form-data; boundary=${boundary}` };
    if (this.o.apiKey) headers.authorization = `Bearer ${this.o.apiKey}`;
    const baseUrl = (this.o.baseUrl ?? 'https://api.openai.com/v1').replace(/\/+$/, '');
    const http = await openHttpStream({
      provider: this.label,
      url: `${baseUrl}/audio/transcriptions`,
      headers,
      body: multipartBody(fields, encodeWav(samples, this.rateHz), boundary),
      signal,
      describeError: describeJsonError,
      ...httpStreamSettings(this.o, TRANSCRIBE_HTTP_DEFAULTS),
    });
    const parts: Uint8Array[] = [];
    let total = 0;
    try {
      for (;;) {
        const chunk = await http.next();
        if (chunk === null) break;
        total += chunk.byteLength;
        if (total > MAX_RESPONSE_BYTES) throw new ProviderError({ provider: this.label, code: 'MALFORMED_RESPONSE', message: `${this.label}: transcription response over ${MAX_RESPONSE_BYTES} bytes` });
        parts.push(chunk);
      }
    } finally {
      http.cancel();
    }
    let body: unknown;
    try {
      body = JSON.parse(Buffer.concat(parts).toString('utf8'));
    } catch (cause) {
      throw new ProviderError({ provider: this.label, code: 'MALFORMED_RESPONSE', message: `${this.label}: transcription response is not JSON`, cause });
    }
    const text = (body as { text?: unknown } | null)?.text;
    if (typeof text !== 'string') throw new ProviderError({ provider: this.label, code: 'MALFORMED_RESPONSE', message: `${this.label}: transcription response has no "text"` });
    return text.trim();
  }

  private emit(ev: AsrEvent & { code?: string }): void {
    if (this.state === 'closed') return;
    const w = this.waiters.shift();
    if (w) w({ value: ev, done: false });
    else this.events.push(ev); // bounded: one final or error per utterance, utterances bounded by maxQueued
  }

  private done(): boolean {
    return this.state === 'closed' || (this.state === 'ending' && !this.inFlight && this.pending.length === 0 && this.events.length === 0);
  }

  private settle(): void {
    if (!this.done()) return;
    for (const w of this.waiters.splice(0)) w({ value: undefined, done: true });
  }
}
