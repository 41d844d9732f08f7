/**
 * One call of the Telnyx simulator (telnyx.ts): its state, what the caller heard, and the audio
 * queue of Call Control's `speak` and `playback_start` ("if multiple ... commands are issued
 * consecutively, the audio files will be placed in a queue awaiting playback").
 */
import { parseWav } from '../../shared/providers/audio/wav.js';
import type { CalleeBehaviour, SentCallback } from './carrier.js';
import type { MediaStreamCall } from './media-call.js';

export type TelnyxCallState = 'initiated' | 'ringing' | 'answered' | 'hangup';

/** One queued audio command: what it plays, how long (ms, already scaled), and the state it set. */
export interface TelnyxAudio {
  kind: 'speak' | 'playback';
  /** `speak` payload, or `audio_url` / `silence:<loop>` for `playback_start`. */
  what: string;
  /** Undefined: the audio could not be fetched or decoded (`playback.ended` status `file_not_found` / `failed`). */
  durationMs?: number;
  failure?: 'file_not_found' | 'failed';
  /** The command's `client_state`, else the call's at the time (its events carry it). */
  clientState?: string;
  /** `media_url` of playback events (empty for `playback_content`). */
  mediaUrl: string;
}

export class TelnyxCall {
  state: TelnyxCallState = 'initiated';
  media?: MediaStreamCall;
  hangupCause = '';
  hangupSource = '';
  transferredTo?: string;
  recorded = false;
  answeredAtMs = 0;
  startedAt = new Date();
  endedAt?: Date;
  readonly callbacks: SentCallback[] = [];
  readonly actions: Array<{ name: string; body: Record<string, unknown> }> = [];
  /** Commands answered 200 but ignored: their `command_id` was seen before on this call. */
  readonly ignored: Array<{ name: string; body: Record<string, unknown> }> = [];
  webhookUrl: string;
  /** The `client_state` the last command set: echoed in every later event. */
  clientState?: string;
  /** Speech the caller heard (`speak` payloads), in order. */
  readonly said: string[] = [];
  /** Audio played to the end: `audio_url`s, or `silence:<loop>` for `playback_content`. */
  readonly played: string[] = [];
  readonly commandIds = new Set<string>();
  /** Event types Telnyx does not deliver on this call (tests of what we do when an event never comes). */
  readonly lost = new Set<string>();
  /** `webhook_retries_policies` of the answer: event type -> delays between retries (ms). */
  retries: Record<string, number[]> = {};
  /** The audio queue: each command plays after the previous one ended. */
  audio: Promise<void> = Promise.resolve();
  readonly ended: Promise<string>;
  readonly mediaReady: Promise<MediaStreamCall>;
  resolveEnded!: (cause: string) => void;
  resolveMedia!: (m: MediaStreamCall) => void;

  constructor(
    readonly callControlId: string,
    readonly direction: 'incoming' | 'outgoing',
    readonly from: string,
    readonly to: string,
    readonly dial: Record<string, unknown>,
    readonly behaviour: CalleeBehaviour,
  ) {
    this.webhookUrl = typeof dial.webhook_url === 'string' ? dial.webhook_url : '';
    this.clientState = typeof dial.client_state === 'string' ? dial.client_state : undefined;
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.mediaReady = new Promise((r) => (this.resolveMedia = r));
  }

  get isOver(): boolean {
    return this.state === 'hangup';
  }
}

/** `client_state` must be base64 (Telnyx: "It must be a valid Base-64 encoded string"). */
export function isBase64(v: unknown): boolean {
  return typeof v === 'string' && v.length > 0 && v.length <= 4096 && /^[A-Za-z0-9+/]+={0,2}$/.test(v) && v.length % 4 === 0;
}

/**
 * Why Telnyx would refuse a command on this call (422), or undefined. The detail texts and codes
 * are the simulator's: Telnyx documents the fields, not every error it answers.
 */
export function refusal(call: TelnyxCall, name: string, body: Record<string, unknown>): string | undefined {
  if (body.client_state !== undefined && !isBase64(body.client_state)) return 'client_state must be a valid Base-64 encoded string';
  if (name === 'answer' && call.state === 'answered') return 'Call has already been answered';
  const needsAnswer = name === 'speak' || name === 'playback_start' || name === 'streaming_start';
  if (needsAnswer && call.state !== 'answered') return 'Call is not answered';
  if (name === 'speak') {
    if (typeof body.payload !== 'string' || !body.payload || body.payload.length > 3000) return 'payload is required (at most 3,000 characters)';
    if (typeof body.voice !== 'string' || !body.voice) return 'voice is required';
  }
  if (name === 'playback_start') {
    const sources = ['audio_url', 'playback_content', 'media_name'].filter((k) => body[k] !== undefined);
    if (sources.length !== 1) return 'exactly one of audio_url, playback_content or media_name is required';
    const loop = body.loop;
    if (loop !== undefined && loop !== 'infinity' && !(Number.isInteger(Number(loop)) && Number(loop) >= 1 && Number(loop) <= 100)) return 'loop must be 1-100 or infinity';
  }
  if (name === 'streaming_start' && (typeof body.stream_url !== 'string' || !/^wss?:\/\//.test(body.stream_url))) return 'stream_url must be a WebSocket URL';
  return undefined;
}

/** What a `playback_start` plays: its audio fetched (`audio_url`) or decoded (`playback_content`), for its scaled duration. */
export async function loadPlayback(clientState: string | undefined, body: Record<string, unknown>, scale: number): Promise<TelnyxAudio> {
  const loop = body.loop === 'infinity' ? 100 : Number(body.loop ?? 1);
  const audioUrl = typeof body.audio_url === 'string' ? body.audio_url : '';
  const base = { kind: 'playback' as const, clientState, mediaUrl: audioUrl, what: audioUrl || `silence:${loop}` };
  let bytes: Uint8Array;
  if (audioUrl) {
    try {
      const res = await fetch(audioUrl, { signal: AbortSignal.timeout(5000) });
      if (!res.ok) return { ...base, failure: 'file_not_found' };
      bytes = new Uint8Array(await res.arrayBuffer());
    } catch {
      return { ...base, failure: 'file_not_found' };
    }
  } else {
    bytes = Buffer.from(String(body.playback_content ?? ''), 'base64');
  }
  try {
    const wav = parseWav(bytes);
    return { ...base, durationMs: (wav.samples.length / wav.sampleRateHz) * 1000 * loop * scale };
  } catch {
    return { ...base, failure: 'failed' };
  }
}

/**
 * Plays one audio command (`send` posts an event of the call): its started and ended events
 * carry the state that command set; the caller hanging up ends it with `call_hangup`.
 */
export async function playAudio(call: TelnyxCall, a: TelnyxAudio, send: (type: string, extra: Record<string, unknown>) => Promise<unknown>): Promise<void> {
  if (call.isOver) return;
  const prefix = a.kind === 'speak' ? 'call.speak' : 'call.playback';
  const extra = { client_state: a.clientState, ...(a.kind === 'playback' ? { media_url: a.mediaUrl, overlay: false } : {}) };
  if (a.durationMs === undefined) return void (await send(`${prefix}.ended`, { ...extra, status: a.failure ?? 'failed' }));
  await send(`${prefix}.started`, extra);
  if (a.kind === 'speak') call.said.push(a.what);
  const until = performance.now() + a.durationMs;
  while (performance.now() < until && !call.isOver) await new Promise((r) => setTimeout(r, Math.min(10, Math.max(1, until - performance.now()))));
  if (a.kind === 'playback' && !call.isOver) call.played.push(a.what);
  await send(`${prefix}.ended`, { ...extra, status: call.isOver ? 'call_hangup' : 'completed' });
}

/** `GET /v2/calls/{id}`'s `data`: `is_alive` and the `client_state` the last command set. */
export function statusOf(call: TelnyxCall): Record<string, unknown> {
  const end = call.endedAt ?? new Date();
  return {
    record_type: 'call',
    call_control_id: call.callControlId,
    call_leg_id: call.callControlId.slice(3),
    call_session_id: call.callControlId.slice(3),
    is_alive: !call.isOver,
    client_state: call.clientState,
    start_time: call.startedAt.toISOString(),
    call_duration: Math.round((end.getTime() - call.startedAt.getTime()) / 1000),
    ...(call.endedAt ? { end_time: call.endedAt.toISOString() } : {}),
  };
}

/** `webhook_retries_policies`: event type -> `retries_ms` (at most 5, summing to at most 60 s, as Telnyx bounds them). */
export function retriesOf(v: unknown): Record<string, number[]> {
  const out: Record<string, number[]> = {};
  if (!v || typeof v !== 'object') return out;
  for (const [type, policy] of Object.entries(v as Record<string, unknown>)) {
    const ms = (policy as { retries_ms?: unknown } | null)?.retries_ms;
    if (!Array.isArray(ms) || ms.length > 5 || !ms.every((x) => Number.isInteger(x) && x >= 0)) continue;
    if ((ms as number[]).reduce((a, b) => a + b, 0) <= 60_000) out[type] = ms as number[];
  }
  return out;
}
