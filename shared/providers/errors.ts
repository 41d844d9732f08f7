/**
 * One error type for every vendor adapter (stable codes, mapped only at the edges): a stable `code`, the vendor's
 * HTTP `status` when there was one, and `retryable` so decorators (withTtsRetry) and the engine
 * decide without parsing messages. Tests assert `.code`, never the message text.
 */
import { redactSecrets } from './redact.js';

export type ProviderErrorCode =
  /** A real vendor was configured without `api_key`. */
  | 'MISSING_API_KEY'
  /** A provider that has no default endpoint (vllm, openai_compatible) was configured without `base_url`. */
  | 'MISSING_BASE_URL'
  /** `provider_name` is not in SUPPORTED_PROVIDERS. */
  | 'UNKNOWN_PROVIDER'
  /** 401/403 from the vendor. */
  | 'AUTH_FAILED'
  /** 429 (rate limit or quota). `retryAfterMs` is set when the vendor said how long to wait. */
  | 'RATE_LIMITED'
  /** 5xx (and Anthropic 529 overloaded). */
  | 'UPSTREAM_UNAVAILABLE'
  /** Any other 4xx: our request was wrong; retrying will not help. */
  | 'BAD_REQUEST'
  /** The connection could not be made (refused, DNS, TLS, WebSocket handshake timeout). */
  | 'CONNECT_FAILED'
  /** No response byte within `firstByteTimeoutMs`. */
  | 'FIRST_BYTE_TIMEOUT'
  /** The stream went quiet for longer than `idleTimeoutMs` after it had started. */
  | 'IDLE_TIMEOUT'
  /** The vendor closed the connection before the stream's end marker. */
  | 'STREAM_INTERRUPTED'
  /** A chunk or message we could not parse. */
  | 'MALFORMED_RESPONSE'
  /** The vendor reported an error inside an otherwise healthy stream (OpenAI `{"error":…}` event, Anthropic `event: error`, Cartesia `type:error`). */
  | 'VENDOR_ERROR'
  /** A consumer fell so far behind that a bounded buffer overflowed (the stream is failed, not truncated silently). */
  | 'BUFFER_OVERFLOW'
  /** A response beyond our bounds (shared/providers/llm/limits.ts, the turn runner's answer length and time). Not retryable. */
  | 'RESPONSE_TOO_LARGE'
  /** A TTS stream falling ever further behind real time (the turn runner's MAX_TTS_BEHIND_MS). Not retryable. */
  | 'TTS_TOO_SLOW'
  /** A TTS stream bringing far more audio than its text can hold (the turn runner's maxTtsAudioMs). Not retryable. */
  | 'TTS_TOO_LONG'
  /** The endpoint (`base_url`) is an address the outbound policy refuses (shared/outbound). Never retryable. */
  | 'OUTBOUND_REFUSED'
  /** The caller's AbortSignal fired. Never retryable. */
  | 'ABORTED';

export interface ProviderErrorInit {
  provider: string;
  code: ProviderErrorCode;
  message: string;
  status?: number;
  retryable?: boolean;
  /** How long the vendor asked us to wait (Retry-After), already converted to milliseconds. */
  retryAfterMs?: number;
  /** The vendor's own error code or type, e.g. `rate_limit_exceeded`, `overloaded_error`. */
  vendorCode?: string;
  cause?: unknown;
}

export class ProviderError extends Error {
  readonly provider: string;
  readonly code: ProviderErrorCode;
  readonly status?: number;
  readonly retryable: boolean;
  readonly retryAfterMs?: number;
  readonly vendorCode?: string;

  constructor(init: ProviderErrorInit) {
    super(init.message, init.cause === undefined ? undefined : { cause: init.cause });
    this.name = 'ProviderError';
    this.provider = init.provider;
    this.code = init.code;
    this.status = init.status;
    this.retryable = init.retryable ?? false;
    this.retryAfterMs = init.retryAfterMs;
    this.vendorCode = init.vendorCode;
  }
}

/**
 * `Retry-After` is either delta-seconds or an HTTP-date (RFC 9110 10.2.3). Returns milliseconds to
 * wait from `nowMs`, or undefined when absent or unparseable. A date in the past means 0.
 */
export function parseRetryAfterMs(value: string | null | undefined, nowMs: number): number | undefined {
  if (value === null || value === undefined) return undefined;
  const v = value.trim();
  if (v === '') return undefined;
  if (/^\d+(\.\d+)?$/.test(v)) return Math.round(Number(v) * 1000);
  const at = Date.parse(v);
  if (Number.isNaN(at)) return undefined;
  return Math.max(0, at - nowMs);
}

/** Only rate limits and server-side failures are worth retrying (docs/protocols.md section 6). */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status >= 500;
}

/** Maps an HTTP status (or a WebSocket upgrade refusal) to our error. */
export function errorFromStatus(args: {
  provider: string;
  status: number;
  message: string;
  retryAfterMs?: number;
  vendorCode?: string;
  /** Credentials of the request: removed from the vendor's text (vendors echo a refused key). */
  secrets?: readonly string[];
}): ProviderError {
  const { status } = args;
  const code: ProviderErrorCode =
    status === 401 || status === 403
      ? 'AUTH_FAILED'
      : status === 429
        ? 'RATE_LIMITED'
        : status >= 500
          ? 'UPSTREAM_UNAVAILABLE'
          : 'BAD_REQUEST';
  return new ProviderError({
    provider: args.provider,
    code,
    status,
    retryable: isRetryableStatus(status),
    retryAfterMs: args.retryAfterMs,
    vendorCode: args.vendorCode,
    message: `${args.provider}: HTTP ${status}: ${redactSecrets(args.message, args.secrets ?? [])}`,
  });
}

export function abortedError(provider: string): ProviderError {
  return new ProviderError({ provider, code: 'ABORTED', message: `${provider}: aborted by caller` });
}
