/**
 * Opens a vendor WebSocket (`ws` client) with a clock-driven connect timeout, turning a refused
 * upgrade (401, 429 + Retry-After, 5xx) into a ProviderError with the HTTP status, so WebSocket
 * vendors follow the same retry rules as HTTP ones.
 *
 * With `outbound` (always, for providers built by the registry: `base_url` is tenant input) the
 * address policy applies: a literal address is checked before the socket exists, a name is
 * resolved by the policy's `lookup` (the TCP connection goes to the checked address, TLS still
 * verifies the name), and redirects are never followed. A refusal is OUTBOUND_REFUSED (not
 * retried) and happens before the upgrade request, so the key in its headers is never sent.
 */
import type { IncomingMessage } from 'node:http';
import type { LookupFunction } from 'node:net';
import WebSocket from 'ws';
import type { Clock } from '../clock.js';
import { ProviderError, abortedError, errorFromStatus, parseRetryAfterMs } from './errors.js';
import { secretsInHeaders } from './redact.js';
import { findOutboundRefusal, type OutboundClient } from '../outbound/index.js';

export interface WsConnectRequest {
  provider: string;
  url: string;
  headers: Record<string, string>;
  /** Upgrade sent -> socket open. */
  timeoutMs: number;
  clock: Clock;
  signal?: AbortSignal;
  /** The outbound client (address policy). Absent: no policy, for operator-trusted URLs only. */
  outbound?: OutboundClient;
}

/** Upgrade-refusal bodies are short JSON; read at most this much. */
const MAX_REFUSAL_BODY_BYTES = 4096;
/**
 * Largest vendor message taken (ws closes the socket with 1009 above it; `ws`'s own default is
 * 100 MiB, buffered whole per call). Vendor messages are transcripts and audio chunks of a few KiB;
 * the bound matches the SSE adapters' per-event one.
 */
export const MAX_VENDOR_WS_MESSAGE_BYTES = 1024 * 1024;

export function connectWebSocket(req: WsConnectRequest): Promise<WebSocket> {
  const { provider, clock, signal } = req;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(provider));
    try {
      req.outbound?.assertUrl(req.url, 'ws');
    } catch (e) {
      return reject(refusedError(provider, e));
    }
    const ws = new WebSocket(req.url, {
      headers: req.headers,
      perMessageDeflate: false,
      followRedirects: false,
      maxPayload: MAX_VENDOR_WS_MESSAGE_BYTES,
      ...(req.outbound ? { lookup: req.outbound.lookup as unknown as LookupFunction } : {}),
    });
    let settled = false;
    const settle = (err: ProviderError | null): void => {
      if (settled) return;
      settled = true;
      clock.clearTimeout(timer);
      signal?.removeEventListener('abort', onAbort);
      ws.off('open', onOpen);
      if (err) {
        // Keep a listener: terminate() on a CONNECTING socket emits 'error' asynchronously.
        ws.on('error', () => undefined);
        ws.terminate();
        reject(err);
      } else resolve(ws);
    };
    const onOpen = (): void => settle(null);
    const onAbort = (): void => settle(abortedError(provider));
    const timer = clock.setTimeout(
      () =>
        settle(
          new ProviderError({
            provider,
            code: 'CONNECT_FAILED',
            retryable: true,
            message: `${provider}: WebSocket not open within ${req.timeoutMs} ms`,
          }),
        ),
      req.timeoutMs,
    );
    signal?.addEventListener('abort', onAbort, { once: true });
    ws.once('open', onOpen);
    ws.once('error', (cause) =>
      settle(
        findOutboundRefusal(cause) ? refusedError(provider, cause) : new ProviderError({
          provider,
          code: 'CONNECT_FAILED',
          retryable: true,
          message: `${provider}: WebSocket connect failed: ${cause.message}`,
          cause,
        }),
      ),
    );
    ws.once('unexpected-response', (clientReq, res: IncomingMessage) => {
      const retryAfterMs = parseRetryAfterMs(headerValue(res.headers['retry-after']), clock.now());
      const chunks: Buffer[] = [];
      let size = 0;
      const done = (): void => {
        clientReq.destroy();
        const text = Buffer.concat(chunks).toString('utf8');
        settle(
          errorFromStatus({
            provider,
            status: res.statusCode ?? 0,
            message: refusalMessage(text) || res.statusMessage || 'upgrade refused',
            retryAfterMs,
            secrets: secretsInHeaders(req.headers),
          }),
        );
      };
      res.on('data', (c: Buffer) => {
        // Overflow policy: the rest of a long refusal body is ignored.
        if (size < MAX_REFUSAL_BODY_BYTES) chunks.push(c);
        size += c.length;
        if (size >= MAX_REFUSAL_BODY_BYTES) done();
      });
      res.once('end', done);
      res.once('error', done);
    });
  });
}

function refusedError(provider: string, cause: unknown): ProviderError {
  const refused = findOutboundRefusal(cause);
  return new ProviderError({ provider, code: 'OUTBOUND_REFUSED', retryable: false, message: `${provider}: ${refused?.message ?? String(cause)}`, cause });
}

function headerValue(h: string | string[] | undefined): string | undefined {
  return Array.isArray(h) ? h[0] : h;
}

/** Deepgram refuses with `{err_code, err_msg}`, Cartesia with `{error}` or plain text. */
function refusalMessage(text: string): string {
  try {
    const j = JSON.parse(text) as Record<string, unknown>;
    const m = j.err_msg ?? j.message ?? j.error ?? j.detail;
    if (m !== undefined) return typeof m === 'string' ? m : JSON.stringify(m);
  } catch {
    // not JSON
  }
  return text.slice(0, 300);
}
