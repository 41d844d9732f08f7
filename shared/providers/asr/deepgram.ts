/**
 * Deepgram live ASR over WebSocket (docs/protocols.md section 5). Audio goes as binary frames, control
 * as text JSON (KeepAlive / Finalize / CloseStream). Results map to AsrEvents:
 * is_final|speech_final -> `final` (endOfTurn = speech_final), otherwise `interim`;
 * UtteranceEnd -> `utterance_end`; SpeechStarted -> `speech_started`.
 *
 * Resilience: an unexpected socket drop reconnects (bounded attempts, exponential backoff) and
 * replays the audio of the unfinished utterance still held in an AudioRing, so the caller's turn
 * survives a vendor hiccup. See DeepgramStream.
 */
import type WebSocket from 'ws';
import { realClock, type Clock, type TimerHandle } from '../../clock.js';
import type { ProviderError } from '../errors.js';
import { connectWebSocket } from '../ws-connect.js';
import type { OutboundClient } from '../../outbound/index.js';
import type { AsrProvider, AsrStream, AsrStreamOptions } from '../types.js';
import { DeepgramStream, type DeepgramResolvedOptions } from './deepgram-stream.js';

export interface DeepgramAsrOptions {
  apiKey: string;
  /** Default `wss://api.deepgram.com`; `/v1/listen` is appended. */
  baseUrl?: string;
  /** Default `nova-3`; a stream's `model` wins. */
  model?: string;
  /** Default `en-US`; a stream's `language` wins. */
  language?: string;
  /** `endpointing`: silence before speech_final. Default 300. */
  endpointingMs?: number;
  /** `utterance_end_ms`. Default 1000 (Deepgram recommends >= 1000). */
  utteranceEndMs?: number;
  /** KeepAlive period while no audio flows (server times out after 10 s). Default 4000. */
  keepAliveMs?: number;
  /** Upgrade -> open. Default 5000. */
  connectTimeoutMs?: number;
  /** Audio held while the first connection opens; oldest dropped beyond. Default 2000. */
  connectBufferMs?: number;
  /** Audio since the last final kept for replay after a drop; oldest dropped beyond. Default 5000. */
  replayBufferMs?: number;
  /** Reconnect attempts after a drop (or a failed connect) before giving up. Default 3. */
  maxReconnectAttempts?: number;
  /** Ceiling of the wait before reconnect n: base * 2^(n-1), full jitter (or the vendor's Retry-After). Default 250. */
  reconnectBackoffMs?: number;
  /** Jitter draw in [0, 1) for the reconnect wait. Default Math.random (tests pin it). */
  random?: () => number;
  /** After `end()`, how long to wait for the server's close before forcing it. Default 5000. */
  endTimeoutMs?: number;
  /**
   * Audio per WebSocket message: pushed frames are joined up to this much before they are sent
   * (Deepgram takes 20-250 ms per message). Default 40: half the sends of 20 ms frames, 38 % less
   * event-loop time for a call's ASR feed (docs/benchmarks.md, "the ASR feed"), for at most 20 ms
   * more before the vendor hears the newest audio while frames keep coming (calls stream
   * continuously). `flush()` and `end()` send a partial message at once, and so does the next
   * KeepAlive tick when pushes pause. 0..250, in whole pushed frames (30 with 20 ms frames acts as
   * 20); 0 or 20 sends every 20 ms frame alone.
   */
  sendChunkMs?: number;
  /** Format `warm()` pre-opens; a stream adopts the warm socket only if its format matches. Default 16 kHz linear16. */
  warmFormat?: { sampleRateHz: number; encoding: 'linear16' | 'mulaw' };
  clock?: Clock;
  /** Address policy for `baseUrl` (tenant input): the registry always passes it. Absent: no policy (operator-trusted URLs only). */
  outbound?: OutboundClient;
}

/** Deepgram's recommended ceiling for audio per message. */
const MAX_SEND_CHUNK_MS = 250;

export function deepgramListenUrl(opts: DeepgramAsrOptions, s: AsrStreamOptions): string {
  const base = (opts.baseUrl ?? 'wss://api.deepgram.com').replace(/\/+$/, '');
  const q = new URLSearchParams({
    model: s.model || opts.model || 'nova-3',
    encoding: s.encoding,
    sample_rate: String(s.sampleRateHz),
    channels: '1',
    interim_results: 'true',
    endpointing: String(opts.endpointingMs ?? 300),
    utterance_end_ms: String(opts.utteranceEndMs ?? 1000),
    vad_events: 'true',
    punctuate: 'true',
    smart_format: 'true',
    language: s.language || opts.language || 'en-US',
  });
  return `${base}/v1/listen?${q.toString()}`;
}

export function createDeepgramAsr(opts: DeepgramAsrOptions): AsrProvider {
  const clock = opts.clock ?? realClock;
  const resolved: DeepgramResolvedOptions = {
    apiKey: opts.apiKey,
    endpointingMs: opts.endpointingMs ?? 300,
    utteranceEndMs: opts.utteranceEndMs ?? 1000,
    keepAliveMs: opts.keepAliveMs ?? 4000,
    connectTimeoutMs: opts.connectTimeoutMs ?? 5000,
    connectBufferMs: opts.connectBufferMs ?? 2000,
    replayBufferMs: opts.replayBufferMs ?? 5000,
    maxReconnectAttempts: opts.maxReconnectAttempts ?? 3,
    reconnectBackoffMs: opts.reconnectBackoffMs ?? 250,
    endTimeoutMs: opts.endTimeoutMs ?? 5000,
    sendChunkMs: Math.min(MAX_SEND_CHUNK_MS, Math.max(0, opts.sendChunkMs ?? 40)),
    clock,
    random: opts.random,
  };
  const warmFormat = opts.warmFormat ?? { sampleRateHz: 16000, encoding: 'linear16' as const };

  // A pre-opened socket waiting for the first stream; KeepAlive holds it past Deepgram's 10 s timeout.
  let warm: { url: string; socket: Promise<WebSocket>; keepAlive: TimerHandle } | null = null;

  function connect(url: string, signal?: AbortSignal): Promise<WebSocket> {
    return connectWebSocket({
      outbound: opts.outbound,
      provider: 'deepgram',
      url,
      headers: { Authorization: `Token ${opts.apiKey}` },
      timeoutMs: resolved.connectTimeoutMs,
      clock,
      signal,
    });
  }

  function takeWarm(url: string): Promise<WebSocket> | undefined {
    const w = warm;
    if (!w) return undefined;
    warm = null;
    clock.clearInterval(w.keepAlive);
    if (w.url === url) return w.socket;
    w.socket.then((ws) => ws.close(1000)).catch(() => undefined);
    return undefined;
  }

  return {
    label: 'deepgram',
    capabilities: { interim: true, acceptsMulaw: true, sampleRatesHz: [8000, 16000] },
    close(): void {
      // An unused pre-warmed socket (session never connected) must not live on via KeepAlive.
      takeWarm('');
    },
    stream(s: AsrStreamOptions): AsrStream {
      const url = deepgramListenUrl(opts, s);
      return new DeepgramStream(resolved, s, (signal) => connect(url, signal), takeWarm(url));
    },
    async warm(): Promise<void> {
      if (warm) return;
      const url = deepgramListenUrl(opts, warmFormat);
      const socket = connect(url);
      const keepAlive = clock.setInterval(() => {
        socket.then((ws) => ws.readyState === ws.OPEN && ws.send('{"type":"KeepAlive"}')).catch(() => undefined);
      }, resolved.keepAliveMs);
      warm = { url, socket, keepAlive };
      try {
        await socket;
      } catch (e) {
        if (warm?.socket === socket) {
          clock.clearInterval(keepAlive);
          warm = null;
        }
        throw e as ProviderError;
      }
    },
  };
}
