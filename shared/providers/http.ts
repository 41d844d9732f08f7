/**
 * Streaming HTTP for the vendor adapters (OpenAI/Anthropic LLM, OpenAI/ElevenLabs TTS), on Node 20's
 * global fetch (undici). One place owns the rules every adapter shares:
 * - retries only 429 and 5xx, only before the first body byte (after that the caller has already
 *   consumed output and a replay would duplicate it), bounded by `maxRetries`, honouring Retry-After;
 * - a first-byte timeout (request sent -> first body byte) and an idle timeout between chunks;
 * - the caller's AbortSignal aborts the in-flight fetch, which makes undici destroy the socket, so
 *   an abandoned turn never leaves an orphaned request streaming tokens nobody reads;
 * - with `outbound` (always, for providers built by the registry: `base_url` is tenant input) the
 *   request goes through the outbound client: a refused endpoint is OUTBOUND_REFUSED (not
 *   retried) and no byte, so no key, reaches it; no redirect is followed.
 * It also owns the adapters' timeout/retry options (`HttpAdapterOptions` + `httpStreamSettings`),
 * so each adapter states only its defaults instead of repeating the same eight lines.
 */
import { backoffDelayMs, type BackoffOptions } from '../backoff.js';
import { realClock, sleepOn, type Clock } from '../clock.js';
import { findOutboundRefusal, type OutboundClient } from '../outbound/index.js';
import { ProviderError, abortedError, errorFromStatus, parseRetryAfterMs } from './errors.js';
import { secretsInHeaders } from './redact.js';

export interface HttpStreamRequest {
  provider: string;
  url: string;
  headers: Record<string, string>;
  /** JSON text, or bytes (multipart uploads: the transcription ASR). */
  body: string | Uint8Array;
  signal: AbortSignal;
  clock: Clock;
  /** Request sent -> first body byte. Covers connect, headers and the vendor's queueing. */
  firstByteTimeoutMs: number;
  /** Longest gap between two body chunks once streaming. */
  idleTimeoutMs: number;
  /** Extra attempts after the first for 429/5xx. */
  maxRetries: number;
  /** Wait when the vendor gave no Retry-After: exponential with full jitter (shared/backoff.ts). */
  backoff: BackoffOptions;
  /** A Retry-After longer than this is not slept through: the error surfaces (retryable) at once. */
  maxRetryAfterMs: number;
  /** Pulls a human message and the vendor's error code out of an error body. */
  describeError(bodyText: string): { message: string; vendorCode?: string };
  /** Observability hook: called before sleeping for a retry. */
  onRetry?(retry: number, backoffMs: number, cause: ProviderError): void;
  /** The outbound client (address policy). Absent: Node's global fetch, for operator-trusted URLs only. */
  outbound?: OutboundClient;
}

/**
 * Timeout and retry options shared by the HTTP streaming adapters (OpenAI/Anthropic LLM,
 * OpenAI/ElevenLabs TTS). Defaults differ by kind: LLM_HTTP_DEFAULTS, TTS_HTTP_DEFAULTS.
 */
export interface HttpAdapterOptions {
  /** Request sent -> first body byte (connect, headers, the vendor's queueing). */
  timeoutMs?: number;
  /** Longest gap between two body chunks once streaming. */
  idleTimeoutMs?: number;
  /** Retries of 429/5xx before the first byte (TTS: 0, retries belong to withTtsRetry so the engine reports them). */
  maxRetries?: number;
  /** Ceiling of the first retry's wait when the vendor sent no Retry-After; doubles per retry, full jitter. */
  baseBackoffMs?: number;
  /** A Retry-After longer than this surfaces the error instead of stalling the turn; also caps our own backoff. */
  maxRetryAfterMs?: number;
  /** Default realClock. */
  clock?: Clock;
  /** Jitter draw in [0, 1) for the backoff. Default Math.random (tests pin it). */
  random?: () => number;
  /** Address policy for `baseUrl` (tenant input): the registry always passes it. Absent: no policy (operator-trusted URLs only). */
  outbound?: OutboundClient;
  /** Observability: a retry is about to sleep `backoffMs`. */
  onRetry?(retry: number, backoffMs: number, cause: ProviderError): void;
}

export type HttpAdapterDefaults = Required<Pick<HttpAdapterOptions, 'timeoutMs' | 'idleTimeoutMs' | 'maxRetries' | 'baseBackoffMs' | 'maxRetryAfterMs'>>;

/** LLM turns: a slow first token is normal (15 s), two quick retries are worth it. */
export const LLM_HTTP_DEFAULTS: HttpAdapterDefaults = { timeoutMs: 15_000, idleTimeoutMs: 30_000, maxRetries: 2, baseBackoffMs: 250, maxRetryAfterMs: 10_000 };
/** TTS: the caller is waiting for audio; retries are withTtsRetry's (maxRetries 0). */
export const TTS_HTTP_DEFAULTS: HttpAdapterDefaults = { timeoutMs: 10_000, idleTimeoutMs: 15_000, maxRetries: 0, baseBackoffMs: 200, maxRetryAfterMs: 5_000 };

export type HttpStreamSettings = Pick<HttpStreamRequest, 'clock' | 'outbound' | 'firstByteTimeoutMs' | 'idleTimeoutMs' | 'maxRetries' | 'backoff' | 'maxRetryAfterMs' | 'onRetry'>;

/** An adapter's options over its kind's defaults, as the fields `openHttpStream` takes. */
export function httpStreamSettings(opts: HttpAdapterOptions, defaults: HttpAdapterDefaults): HttpStreamSettings {
  const maxRetryAfterMs = opts.maxRetryAfterMs ?? defaults.maxRetryAfterMs;
  return {
    clock: opts.clock ?? realClock,
    outbound: opts.outbound,
    firstByteTimeoutMs: opts.timeoutMs ?? defaults.timeoutMs,
    idleTimeoutMs: opts.idleTimeoutMs ?? defaults.idleTimeoutMs,
    maxRetries: opts.maxRetries ?? defaults.maxRetries,
    backoff: { baseMs: opts.baseBackoffMs ?? defaults.baseBackoffMs, maxMs: maxRetryAfterMs, random: opts.random },
    maxRetryAfterMs,
    onRetry: opts.onRetry,
  };
}

/** Error bodies are read only this far (they are short JSON; a proxy's HTML page is not). */
const MAX_ERROR_BODY_BYTES = 16 * 1024;

/** A response body being read chunk by chunk with an idle timeout. */
export class HttpByteStream {
  private pendingFirst: Uint8Array | null;
  private finished = false;

  constructor(
    private readonly req: HttpStreamRequest,
    private readonly reader: ReadableStreamDefaultReader<Uint8Array>,
    private readonly controller: AbortController,
    first: Uint8Array | null,
    private readonly detach: () => void,
    /** Response headers, for adapters that read metadata (e.g. request ids). */
    readonly headers: Headers,
  ) {
    this.pendingFirst = first;
    if (first === null) this.finish();
  }

  /** The idle bound and its clock: a reader that skips keep-alives (SSE comments) bounds its data by them too. */
  get idle(): { clock: Clock; timeoutMs: number } {
    return { clock: this.req.clock, timeoutMs: this.req.idleTimeoutMs };
  }

  /** Next non-empty chunk, or null at the end of the body. */
  async next(): Promise<Uint8Array | null> {
    if (this.pendingFirst) {
      const f = this.pendingFirst;
      this.pendingFirst = null;
      return f;
    }
    if (this.finished) return null;
    const { clock, idleTimeoutMs, provider, signal } = this.req;
    let idle = false;
    const timer = clock.setTimeout(() => {
      idle = true;
      this.controller.abort();
    }, idleTimeoutMs);
    try {
      for (;;) {
        const r = await this.reader.read();
        if (r.done) {
          this.finish();
          return null;
        }
        if (r.value.byteLength > 0) return r.value;
      }
    } catch (cause) {
      this.cancel();
      if (signal.aborted) throw abortedError(provider);
      if (idle)
        throw new ProviderError({
          provider,
          code: 'IDLE_TIMEOUT',
          retryable: true,
          message: `${provider}: no data for ${idleTimeoutMs} ms mid-stream`,
          cause,
        });
      throw new ProviderError({
        provider,
        code: 'STREAM_INTERRUPTED',
        retryable: true,
        message: `${provider}: connection lost mid-stream`,
        cause,
      });
    } finally {
      clock.clearTimeout(timer);
    }
  }

  /**
   * After the stream's own end marker ([DONE], message_stop): read the few bytes left so undici can
   * return the connection to its keep-alive pool (a fresh TLS handshake costs the next turn tens of
   * ms). Bounded: a server that keeps talking past its end marker for `graceMs` is cut off.
   */
  async drain(graceMs = 250): Promise<void> {
    if (this.finished) return;
    const timer = this.req.clock.setTimeout(() => this.cancel(), graceMs);
    try {
      // Overflow policy: at most 8 more chunks are read, then the connection is dropped instead.
      for (let i = 0; i < 8; i++) if ((await this.next()) === null) return;
      this.cancel();
    } catch {
      // cancelled by the grace timer or the connection broke: nothing left to save
    } finally {
      this.req.clock.clearTimeout(timer);
    }
  }

  /** Aborts the request (idempotent). Undici destroys the socket, so the vendor sees the close. */
  cancel(): void {
    if (!this.finished) this.controller.abort();
    this.finish();
  }

  private finish(): void {
    if (this.finished) return;
    this.finished = true;
    this.detach();
  }
}

export function sleepMs(clock: Clock, ms: number, signal: AbortSignal, provider: string): Promise<void> {
  return sleepOn(clock, ms, signal, () => abortedError(provider));
}

/** POSTs and resolves once the first body byte arrived (or the body ended empty). */
export async function openHttpStream(req: HttpStreamRequest): Promise<HttpByteStream> {
  for (let retry = 0; ; retry++) {
    try {
      return await attempt(req);
    } catch (e) {
      if (!(e instanceof ProviderError)) throw e;
      const canRetry =
        e.retryable &&
        (e.code === 'RATE_LIMITED' || e.code === 'UPSTREAM_UNAVAILABLE') &&
        retry < req.maxRetries &&
        (e.retryAfterMs ?? 0) <= req.maxRetryAfterMs;
      if (!canRetry) throw e;
      const backoffMs = e.retryAfterMs ?? backoffDelayMs(retry + 1, req.backoff);
      req.onRetry?.(retry + 1, backoffMs, e);
      await sleepMs(req.clock, backoffMs, req.signal, req.provider);
    }
  }
}

async function attempt(req: HttpStreamRequest): Promise<HttpByteStream> {
  const { provider, clock, signal } = req;
  if (signal.aborted) throw abortedError(provider);
  const controller = new AbortController();
  const onAbort = (): void => controller.abort();
  signal.addEventListener('abort', onAbort, { once: true });
  const detach = (): void => signal.removeEventListener('abort', onAbort);
  let firstByteTimedOut = false;
  const timer = clock.setTimeout(() => {
    firstByteTimedOut = true;
    controller.abort();
  }, req.firstByteTimeoutMs);
  try {
    const init = { method: 'POST', headers: req.headers, body: req.body, signal: controller.signal };
    const res = req.outbound ? await req.outbound.fetch(req.url, init) : await fetch(req.url, init);
    if (!res.ok || !res.body) {
      const text = res.body ? await readCapped(res.body, MAX_ERROR_BODY_BYTES) : '';
      const { message, vendorCode } = req.describeError(text);
      throw errorFromStatus({
        provider,
        status: res.status,
        message,
        vendorCode,
        retryAfterMs: parseRetryAfterMs(res.headers.get('retry-after'), clock.now()),
        secrets: secretsInHeaders(req.headers),
      });
    }
    const reader = res.body.getReader();
    let first: Uint8Array | null = null;
    for (;;) {
      const r = await reader.read();
      if (r.done) break;
      if (r.value.byteLength > 0) {
        first = r.value;
        break;
      }
    }
    return new HttpByteStream(req, reader, controller, first, detach, res.headers);
  } catch (cause) {
    controller.abort();
    detach();
    if (cause instanceof ProviderError) throw cause;
    const refused = findOutboundRefusal(cause);
    if (refused) throw new ProviderError({ provider, code: 'OUTBOUND_REFUSED', retryable: false, message: `${provider}: ${refused.message}`, cause: refused });
    if (signal.aborted) throw abortedError(provider);
    if (firstByteTimedOut)
      throw new ProviderError({
        provider,
        code: 'FIRST_BYTE_TIMEOUT',
        retryable: true,
        message: `${provider}: no response byte within ${req.firstByteTimeoutMs} ms`,
        cause,
      });
    throw new ProviderError({
      provider,
      code: 'CONNECT_FAILED',
      retryable: true,
      message: `${provider}: request failed: ${(cause as Error)?.message ?? String(cause)}`,
      cause,
    });
  } finally {
    clock.clearTimeout(timer);
  }
}

async function readCapped(body: ReadableStream<Uint8Array>, maxBytes: number): Promise<string> {
  const reader = body.getReader();
  const parts: Uint8Array[] = [];
  let total = 0;
  try {
    while (total < maxBytes) {
      const r = await reader.read();
      if (r.done) break;
      parts.push(r.value);
      total += r.value.byteLength;
    }
  } finally {
    // Overflow policy: whatever is beyond maxBytes is discarded with the connection.
    void reader.cancel().catch(() => undefined);
  }
  return Buffer.concat(parts).subarray(0, maxBytes).toString('utf8');
}

/** Common JSON error-body reader: OpenAI `{error:{message,code,type}}`, Anthropic `{type:'error',error:{type,message}}`, ElevenLabs `{detail:…}`. */
export function describeJsonError(text: string): { message: string; vendorCode?: string } {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const err = j.error as Record<string, unknown> | string | undefined;
    if (typeof err === 'string') return { message: err };
    if (err && typeof err === 'object') {
      const code = err.code ?? err.type;
      return { message: String(err.message ?? text), vendorCode: code == null ? undefined : String(code) };
    }
    const detail = j.detail as Record<string, unknown> | unknown[] | string | undefined;
    if (typeof detail === 'string') return { message: detail };
    if (Array.isArray(detail)) return { message: JSON.stringify(detail).slice(0, 500), vendorCode: 'validation_error' };
    if (detail && typeof detail === 'object')
      return { message: String(detail.message ?? JSON.stringify(detail)), vendorCode: detail.status ? String(detail.status) : undefined };
  } catch {
    // Not JSON (a proxy's HTML page, an empty body): the text itself is the message.
  }
  return { message: text.slice(0, 500) || 'no error body' };
}
