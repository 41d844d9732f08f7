/**
 * The carrier-neutral shape of one inbound media-stream message, for the carriers whose wire
 * differs from Twilio's (Plivo, Vonage, Exotel: `plivo-stream.ts`, `vonage-stream.ts`,
 * `exotel-stream.ts`). Each wire module turns the carrier's frame into one of these after checking
 * every field for type, range and size (the rules of twilio-media.ts: untrusted input, never
 * thrown, a closed set of reasons); the transport (media-engine/transports/stream-transport.ts)
 * does the stateful checks (windows, order) and feeds the same jitter buffer as Twilio's.
 */
import type { CarrierInvalidReason } from './twilio-media.js';

export { parseCounter, MAX_CARRIER_FRAME_CHARS, MAX_MEDIA_PAYLOAD_BYTES, MAX_MARK_NAME_CHARS, MAX_CUSTOM_PARAMETERS, MAX_PARAMETER_NAME_CHARS, MAX_PARAMETER_VALUE_CHARS, type CarrierInvalidReason } from './twilio-media.js';

/** Audio on the wire of a stream: G.711 mu-law, or signed 16-bit little-endian linear PCM. */
export type StreamEncoding = 'mulaw' | 'l16';

export interface StreamAudioFormat {
  encoding: StreamEncoding;
  sampleRateHz: 8000 | 16000;
}

export type StreamFrame =
  /** Vonage's first text frame carries the format and our headers (the session): a `start`. */
  | { event: 'start'; streamId: string; callId: string; customParameters: Record<string, string>; format?: StreamAudioFormat }
  /**
   * Audio. `payload` is base64 (JSON carriers) or the bytes themselves (Vonage binary frames).
   * `chunk`/`timestampMs` are the carrier's counters when it sends them (undefined: the transport counts).
   */
  | { event: 'media'; chunk?: number; timestampMs?: number; payload: string | Uint8Array }
  | { event: 'mark'; name: string }
  /** The carrier confirms a `clear` (Plivo `clearedAudio`, Vonage `websocket:cleared`). */
  | { event: 'cleared' }
  | { event: 'dtmf'; digit: string }
  | { event: 'stop' }
  /** A frame that needs nothing from us (Exotel `connected`, Vonage `websocket:notify` without a mark). */
  | { event: 'ignored' }
  /** An event name we do not know: ignored and counted, not an error. */
  | { event: 'unknown' };

export type StreamParse = { ok: true; frame: StreamFrame } | { ok: false; reason: CarrierInvalidReason };

export const DTMF_DIGIT = /^[0-9A-Da-d*#]$/;
export const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
/** Stream / call ids: Plivo and Vonage use UUIDs, Exotel Twilio-style sids. */
export const STREAM_ID = /^[A-Za-z0-9_.:-]{1,64}$/;

export const fail = (reason: CarrierInvalidReason): StreamParse => ({ ok: false, reason });
export const ok = (frame: StreamFrame): StreamParse => ({ ok: true, frame });

export function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

export function boundedString(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

/** A base64 payload of at most `maxBytes` decoded bytes (alphabet, padding, length a multiple of 4). */
export function isBase64Payload(v: unknown, maxBytes: number): v is string {
  return typeof v === 'string' && v.length > 0 && v.length <= Math.ceil(maxBytes / 3) * 4 && v.length % 4 === 0 && BASE64.test(v);
}

/** JSON.parse that never throws, and refuses anything but an object. */
export function parseObject(text: string, maxChars: number): Record<string, unknown> | CarrierInvalidReason {
  if (text.length > maxChars) return 'too_large';
  let v: unknown;
  try {
    v = JSON.parse(text);
  } catch {
    return 'not_json';
  }
  return isRecord(v) ? v : 'not_object';
}

/**
 * String-valued parameters, bounded in count and size; a non-string scalar is refused (a nested
 * object would be a way to smuggle unbounded data through).
 */
export function boundedParams(v: unknown, limits: { count: number; name: number; value: number }): Record<string, string> | undefined {
  if (!isRecord(v)) return undefined;
  const entries = Object.entries(v);
  if (entries.length > limits.count) return undefined;
  const out: Record<string, string> = {};
  for (const [k, val] of entries) {
    if (k.length > limits.name) return undefined;
    const s = typeof val === 'number' || typeof val === 'boolean' ? String(val) : val;
    if (typeof s !== 'string' || s.length > limits.value) return undefined;
    out[k] = s;
  }
  return out;
}
