/**
 * Cartesia WebSocket TTS (docs.cartesia.ai/api-reference/tts/websocket; docs/protocols.md section 7).
 * One socket per provider instance, opened lazily (or by `warm()`), multiplexing one context per
 * `synthesize` call: `{model_id, transcript, voice:{mode:'id',id}, language, context_id,
 * output_format:{container:'raw',encoding:'pcm_s16le',sample_rate}, continue:false}`.
 * Replies carry our `context_id`: `chunk` (base64 PCM), `timestamps`, `flush_done`, `done`, `error`.
 * Barge-in sends `{context_id, cancel:true}` on the same socket.
 */
import { randomUUID } from 'node:crypto';
import type WebSocket from 'ws';
import { realClock, type Clock, type TimerHandle } from '../../clock.js';
import { AsyncQueue } from '../async-queue.js';
import { ProviderError, abortedError, isRetryableStatus } from '../errors.js';
import { parseJsonChunk } from '../sse.js';
import { connectWebSocket } from '../ws-connect.js';
import type { OutboundClient } from '../../outbound/index.js';
import type { PcmChunk, TtsProvider, TtsRequest } from '../types.js';
import { S16leAssembler } from './pcm-bytes.js';

export interface CartesiaTtsOptions {
  apiKey: string;
  /** Default `wss://api.cartesia.ai`; `/tts/websocket` is appended. */
  baseUrl?: string;
  /** `model_id`. Default `sonic-2`. */
  model?: string;
  /** Voice id (`voice:{mode:'id',id}`). A request's `voice` wins. Required by the API. */
  voice?: string;
  /** `Cartesia-Version` header. Default `2024-11-13`. */
  version?: string;
  /** Default `en`; a request's `language` (its primary subtag) wins. */
  language?: string;
  /** Upgrade -> open. Default 5000. */
  connectTimeoutMs?: number;
  /** Context sent -> first audio chunk. Default 10000. */
  timeoutMs?: number;
  /** Longest gap between chunks of one context. Default 15000. */
  idleTimeoutMs?: number;
  clock?: Clock;
  /** Address policy for `baseUrl` (tenant input): the registry always passes it. Absent: no policy (operator-trusted URLs only). */
  outbound?: OutboundClient;
}

/** Rates the raw `pcm_s16le` container is asked for directly; anything else gets 16 kHz. */
const CARTESIA_RATES_HZ = [8000, 16000, 22050, 24000, 44100];

/**
 * Per-context bound on undelivered chunks (a chunk is ~20-100 ms). Overflow policy: the context is
 * cancelled and its stream fails with BUFFER_OVERFLOW; truncating speech silently would be worse.
 */
const MAX_QUEUED_CHUNKS = 2000;

interface Context {
  queue: AsyncQueue<PcmChunk>;
  pcm: S16leAssembler;
  sampleRateHz: number;
  /** First-byte timer until the first chunk, then the idle timer. */
  timer: TimerHandle | undefined;
  gotFirst: boolean;
}

export interface CartesiaTts extends TtsProvider {
  /** Closes the shared socket; active contexts fail with ABORTED. Idempotent. */
  close(): void;
}

export function createCartesiaTts(opts: CartesiaTtsOptions): CartesiaTts {
  const label = 'cartesia';
  const clock = opts.clock ?? realClock;
  const url = `${(opts.baseUrl ?? 'wss://api.cartesia.ai').replace(/\/+$/, '')}/tts/websocket`;
  const contexts = new Map<string, Context>();
  let socket: WebSocket | null = null;
  let connecting: Promise<WebSocket> | null = null;
  let closed = false;

  function failAll(err: ProviderError): void {
    for (const ctx of contexts.values()) {
      clock.clearTimeout(ctx.timer);
      ctx.queue.fail(err);
    }
    contexts.clear();
  }

  function armTimer(id: string, ctx: Context): void {
    clock.clearTimeout(ctx.timer);
    const ms = ctx.gotFirst ? (opts.idleTimeoutMs ?? 15_000) : (opts.timeoutMs ?? 10_000);
    ctx.timer = clock.setTimeout(() => {
      contexts.delete(id);
      sendCancel(id);
      ctx.queue.fail(
        new ProviderError({
          provider: label,
          code: ctx.gotFirst ? 'IDLE_TIMEOUT' : 'FIRST_BYTE_TIMEOUT',
          retryable: true,
          message: `${label}: no audio for ${ms} ms`,
        }),
      );
    }, ms);
  }

  function onMessage(data: WebSocket.RawData, isBinary: boolean): void {
    if (isBinary) return; // the protocol is JSON text only
    let msg: Record<string, unknown>;
    try {
      msg = parseJsonChunk(label, data.toString());
    } catch (err) {
      // A broken frame (not JSON, or JSON that is not an object) on a multiplexed socket cannot be
      // attributed to one context: fail them all and drop the socket, whose framing we no longer trust.
      failAll(err as ProviderError);
      socket?.terminate();
      return;
    }
    const id = String(msg.context_id ?? '');
    const ctx = contexts.get(id);
    if (!ctx) return; // late messages for a cancelled or finished context
    const type = msg.type ?? (typeof msg.data === 'string' ? 'chunk' : undefined);
    if (type === 'chunk' && typeof msg.data === 'string') {
      ctx.gotFirst = true;
      armTimer(id, ctx);
      const samples = ctx.pcm.push(Buffer.from(msg.data, 'base64'));
      if (samples.length > 0 && !ctx.queue.push({ samples, sampleRateHz: ctx.sampleRateHz })) {
        contexts.delete(id);
        clock.clearTimeout(ctx.timer);
        sendCancel(id);
        ctx.queue.fail(
          new ProviderError({ provider: label, code: 'BUFFER_OVERFLOW', message: `${label}: consumer too slow` }),
        );
      }
    } else if (type === 'error') {
      contexts.delete(id);
      clock.clearTimeout(ctx.timer);
      const status = typeof msg.status_code === 'number' ? msg.status_code : undefined;
      // Newer API versions send title/message/error_code; 2024-11-13 sends `error` as a string.
      const text = [msg.title, msg.message ?? msg.error].filter((x) => typeof x === 'string').join(': ');
      ctx.queue.fail(
        new ProviderError({
          provider: label,
          code: 'VENDOR_ERROR',
          status,
          retryable: status !== undefined && isRetryableStatus(status),
          vendorCode: typeof msg.error_code === 'string' ? msg.error_code : undefined,
          message: `${label}: ${text || 'error'}`,
        }),
      );
    } else if (type === 'done' || msg.done === true) {
      contexts.delete(id);
      clock.clearTimeout(ctx.timer);
      ctx.queue.end();
    }
    // `timestamps`, `phoneme_timestamps`, `flush_done`: not used.
  }

  async function getSocket(signal: AbortSignal): Promise<WebSocket> {
    if (closed) throw abortedError(label);
    if (socket && socket.readyState === socket.OPEN) return socket;
    if (!connecting) {
      connecting = connectWebSocket({
        outbound: opts.outbound,
        provider: label,
        url,
        headers: { 'X-API-Key': opts.apiKey, 'Cartesia-Version': opts.version ?? '2024-11-13' },
        timeoutMs: opts.connectTimeoutMs ?? 5_000,
        clock,
      }).then(
        (ws) => {
          connecting = null;
          if (closed) {
            ws.close(1000);
            throw abortedError(label);
          }
          socket = ws;
          ws.on('message', (data, isBinary) => {
            // A socket event handler that throws is an uncaught exception: the whole process.
            try {
              onMessage(data, isBinary);
            } catch (err) {
              failAll(new ProviderError({ provider: label, code: 'MALFORMED_RESPONSE', message: `${label}: message not understood (${(err as Error).message})` }));
              socket?.terminate();
            }
          });
          ws.on('error', () => undefined); // 'close' follows and is where we act
          ws.on('close', () => {
            if (socket === ws) socket = null;
            failAll(
              new ProviderError({
                provider: label,
                code: 'STREAM_INTERRUPTED',
                retryable: true,
                message: `${label}: socket closed mid-synthesis`,
              }),
            );
          });
          return ws;
        },
        (err: unknown) => {
          connecting = null;
          throw err;
        },
      );
    }
    // Abort only stops *our* wait: the shared connect goes on for the next caller.
    const pending = connecting;
    return new Promise<WebSocket>((resolve, reject) => {
      const onAbort = (): void => reject(abortedError(label));
      if (signal.aborted) return onAbort();
      signal.addEventListener('abort', onAbort, { once: true });
      pending.then(
        (ws) => {
          signal.removeEventListener('abort', onAbort);
          resolve(ws);
        },
        (e: unknown) => {
          signal.removeEventListener('abort', onAbort);
          reject(e);
        },
      );
    });
  }

  function sendCancel(id: string): void {
    if (socket && socket.readyState === socket.OPEN) socket.send(JSON.stringify({ context_id: id, cancel: true }));
  }

  async function* synthesize(req: TtsRequest): AsyncGenerator<PcmChunk> {
    if (req.text.trim() === '') return;
    const ws = await getSocket(req.signal);
    const id = `ctx-${randomUUID()}`;
    const sampleRateHz = CARTESIA_RATES_HZ.includes(req.preferredSampleRateHz) ? req.preferredSampleRateHz : 16000;
    const ctx: Context = {
      queue: new AsyncQueue<PcmChunk>(MAX_QUEUED_CHUNKS),
      pcm: new S16leAssembler(),
      sampleRateHz,
      timer: undefined,
      gotFirst: false,
    };
    contexts.set(id, ctx);
    const onAbort = (): void => {
      if (contexts.delete(id)) sendCancel(id);
      clock.clearTimeout(ctx.timer);
      ctx.queue.fail(abortedError(label));
    };
    req.signal.addEventListener('abort', onAbort, { once: true });
    try {
      ws.send(
        JSON.stringify({
          model_id: req.model || opts.model || 'sonic-2',
          transcript: req.text,
          voice: { mode: 'id', id: req.voice || opts.voice || '' },
          language: (req.language || opts.language || 'en').split('-')[0],
          context_id: id,
          output_format: { container: 'raw', encoding: 'pcm_s16le', sample_rate: sampleRateHz },
          continue: false,
        }),
      );
      armTimer(id, ctx);
      for await (const chunk of ctx.queue) yield chunk;
    } finally {
      req.signal.removeEventListener('abort', onAbort);
      clock.clearTimeout(ctx.timer);
      // Consumer broke out early (or errored): stop the vendor generating audio nobody plays.
      if (contexts.delete(id)) sendCancel(id);
    }
  }

  return {
    label,
    capabilities: { streaming: true, sampleRatesHz: CARTESIA_RATES_HZ },
    synthesize: (req) => synthesize(req),
    async warm(): Promise<void> {
      await getSocket(new AbortController().signal);
    },
    close(): void {
      closed = true;
      failAll(abortedError(label));
      const ws = socket;
      socket = null;
      ws?.close(1000);
    },
  };
}
