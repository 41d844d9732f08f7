/**
 * Opens a vendor WebSocket (`ws` client) with a clock-driven connect timeout, turning a refused
 * upgrade (401, 429 + Retry-After, 5xx) into a ProviderError with the HTTP status, so WebSocket
 * vendors follow the same retry rules as HTTP ones.
 */
import type { IncomingMessage } from 'node:http';
import WebSocket from 'ws';
import type { Clock } from '../../shared/clock.js';
import { ProviderError, abortedError, errorFromStatus, parseRetryAfterMs } from './errors.js';

export interface WsConnectRequest {
  provider: string;
  url: string;
  headers: Record<string, string>;
  /** Upgrade sent -> socket open. */
  timeoutMs: number;
  clock: Clock;
  signal?: AbortSignal;
}

/** Upgrade-refusal bodies are short JSON; read at most this much. */
const MAX_REFUSAL_BODY_BYTES = 4096;

export function connectWebSocket(req: WsConnectRequest): Promise<WebSocket> {
  const { provider, clock, signal } = req;
  return new Promise((resolve, reject) => {
    if (signal?.aborted) return reject(abortedError(provider));
    const ws = new WebSocket(req.url, { headers: req.headers, perMessageDeflate: false });
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
        new ProviderError({
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
