/**
 * Twilio Media Streams frames from the carrier (docs/protocols.md section 1), decoded only at the edge
 * (a typed socket protocol, decoded only at the edge). Everything the carrier sends is untrusted: one `media` frame with
 * `chunk: "1e300"` used to freeze the whole node (issue 11, "one carrier frame freezes the node"),
 * so every field is checked here for type, range and size before anything uses it. Stateful checks
 * (counters within a window of the stream's own position, the order start -> media) are the
 * transport's (media-engine/transports/twilio.ts); this module is pure.
 */

import { isRecord, parseObject } from './stream-frames.js';

/** Largest text frame we parse; uWS closes the socket above its own maxPayloadLength before this. */
export const MAX_CARRIER_FRAME_CHARS = 16 * 1024;
/**
 * A 20 ms mu-law frame is 160 bytes, but the size is not promised (protocols.md): we accept up to
 * 4 KiB (512 ms of mu-law, 128 ms of 16 kHz PCM), cut into 20 ms frames by the transport. 1 KiB
 * refused a 160 ms sender's every frame, so its caller was never heard and the call was closed.
 */
export const MAX_MEDIA_PAYLOAD_BYTES = 4096;
/** base64 characters of MAX_MEDIA_PAYLOAD_BYTES. */
export const MAX_MEDIA_PAYLOAD_CHARS = Math.ceil(MAX_MEDIA_PAYLOAD_BYTES / 3) * 4;
/** Twilio sids are 34 characters (`MZ`/`CA`/`AC` + 32 hex); anything far longer is not a sid. */
export const MAX_SID_CHARS = 64;
export const MAX_MARK_NAME_CHARS = 128;
/** `<Parameter>`s of the TwiML `<Stream>`: how many, and how long each name and value may be. */
export const MAX_CUSTOM_PARAMETERS = 32;
export const MAX_PARAMETER_NAME_CHARS = 64;
export const MAX_PARAMETER_VALUE_CHARS = 256;

/** Why a frame was rejected: a closed set, so per-reason counters stay bounded. */
export type CarrierInvalidReason =
  | 'too_large'
  | 'not_json'
  | 'not_object'
  | 'bad_event'
  | 'bad_sequence_number'
  | 'bad_stream_sid'
  | 'bad_start'
  | 'bad_media_format'
  | 'bad_custom_parameters'
  | 'bad_chunk'
  | 'bad_timestamp'
  | 'bad_track'
  | 'bad_payload'
  | 'bad_mark'
  | 'bad_dtmf'
  // Stateful reasons, set by the transport.
  | 'chunk_out_of_window'
  | 'timestamp_out_of_window'
  | 'sequence_out_of_window'
  | 'stream_sid_mismatch'
  | 'duplicate_start'
  | 'media_before_start'
  | 'binary_frame'
  // Over the socket's frame budget: dropped before it is decoded or parsed.
  | 'frame_rate';

interface Base {
  /** Counts every message of the stream (absent on `connected`; optional elsewhere). */
  sequenceNumber?: number;
  streamSid?: string;
}

/**
 * The normalized carrier frame: Twilio's frames as parsed here, and every other carrier's frames
 * mapped onto the same events by its protocol (media-engine/transports/<carrier>.ts).
 */
export type CarrierFrame =
  | { event: 'connected' }
  | (Base & {
      event: 'start';
      streamSid: string;
      callSid: string;
      accountSid: string;
      customParameters: Record<string, string>;
      /** The stream's media when the carrier names one other than its protocol's default. */
      format?: { codec: 'pcmu' | 'pcma' | 'l16'; sampleRateHz: number };
    })
  /** `payload`: base64 text (JSON carriers) or the raw bytes (binary carriers, reused: consume now). */
  | (Base & { event: 'media'; track: 'inbound' | 'outbound'; chunk: number; timestampMs: number; payload: string | Uint8Array })
  | (Base & { event: 'mark'; name: string })
  | (Base & { event: 'dtmf'; digit: string })
  | (Base & { event: 'stop' })
  /** An event name we do not know: ignored and counted, not an error (Twilio adds events over time). */
  | { event: 'unknown' };

export type CarrierParse = { ok: true; frame: CarrierFrame } | { ok: false; reason: CarrierInvalidReason };

const KNOWN = new Set(['connected', 'start', 'media', 'mark', 'dtmf', 'stop']);
const DIGITS = /^[0-9]{1,16}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const SID = /^[A-Za-z0-9_-]+$/;
const DTMF = /^[0-9A-Da-d*#]$/;

const fail = (reason: CarrierInvalidReason): CarrierParse => ({ ok: false, reason });

/**
 * A counter field: a string of decimal digits or a JSON number, either way a non-negative SAFE
 * integer. `1e300`, `2e8` as a string, `-1`, `abc`, `1.5` and `9007199254740993` (above 2^53 the
 * next integer cannot be represented, so `s++` stops changing `s`) are all refused.
 */
export function parseCounter(v: unknown): number | undefined {
  if (typeof v === 'number') return Number.isSafeInteger(v) && v >= 0 ? v : undefined;
  if (typeof v !== 'string' || !DIGITS.test(v)) return undefined;
  const n = Number(v);
  return Number.isSafeInteger(n) ? n : undefined;
}

function boundedString(v: unknown, max: number): string | undefined {
  return typeof v === 'string' && v.length <= max ? v : undefined;
}

function sid(v: unknown): string | undefined {
  const s = boundedString(v, MAX_SID_CHARS);
  return s !== undefined && SID.test(s) ? s : undefined;
}

/** Parses and validates one carrier text frame. Never throws; the cost is linear in its length. */
export function parseCarrierFrame(text: string): CarrierParse {
  const v = parseObject(text, MAX_CARRIER_FRAME_CHARS);
  if (typeof v === 'string') return fail(v);
  if (typeof v.event !== 'string') return fail('bad_event');
  if (!KNOWN.has(v.event)) return { ok: true, frame: { event: 'unknown' } };
  if (v.event === 'connected') return { ok: true, frame: { event: 'connected' } };

  const base: Base = {};
  if (v.sequenceNumber !== undefined) {
    const n = parseCounter(v.sequenceNumber);
    if (n === undefined) return fail('bad_sequence_number');
    base.sequenceNumber = n;
  }
  if (v.streamSid !== undefined) {
    const s = sid(v.streamSid);
    if (s === undefined) return fail('bad_stream_sid');
    base.streamSid = s;
  }

  switch (v.event) {
    case 'media':
      return parseMedia(v.media, base.sequenceNumber, base.streamSid);
    case 'start':
      return parseStart(v.start, base);
    case 'mark': {
      const name = isRecord(v.mark) ? boundedString(v.mark.name, MAX_MARK_NAME_CHARS) : undefined;
      return name ? { ok: true, frame: { ...base, event: 'mark', name } } : fail('bad_mark');
    }
    case 'dtmf': {
      const digit = isRecord(v.dtmf) ? v.dtmf.digit : undefined;
      return typeof digit === 'string' && DTMF.test(digit) ? { ok: true, frame: { ...base, event: 'dtmf', digit } } : fail('bad_dtmf');
    }
    default:
      return { ok: true, frame: { ...base, event: 'stop' } };
  }
}

/**
 * 50 of these a second per call: the frame is built as one literal of a fixed shape. An object
 * spread (`{ ...base, ... }`) here cost ~4 us per frame in V8, more than the JSON parse.
 */
function parseMedia(media: unknown, sequenceNumber: number | undefined, streamSid: string | undefined): CarrierParse {
  if (!isRecord(media)) return fail('bad_payload');
  let track: 'inbound' | 'outbound' = 'inbound';
  if (media.track !== undefined) {
    if (media.track !== 'inbound' && media.track !== 'outbound') return fail('bad_track');
    track = media.track;
  }
  const chunk = parseCounter(media.chunk);
  if (chunk === undefined) return fail('bad_chunk');
  const timestampMs = parseCounter(media.timestamp);
  if (timestampMs === undefined) return fail('bad_timestamp');
  const payload = media.payload;
  if (typeof payload !== 'string' || payload.length === 0 || payload.length > MAX_MEDIA_PAYLOAD_CHARS || payload.length % 4 !== 0 || !BASE64.test(payload)) {
    return fail('bad_payload');
  }
  return { ok: true, frame: { event: 'media', sequenceNumber, streamSid, track, chunk, timestampMs, payload } };
}

function parseStart(start: unknown, base: Base): CarrierParse {
  if (!isRecord(start)) return fail('bad_start');
  const streamSid = sid(start.streamSid ?? base.streamSid);
  if (streamSid === undefined || (base.streamSid !== undefined && base.streamSid !== streamSid)) return fail('bad_stream_sid');
  const callSid = start.callSid === undefined ? '' : sid(start.callSid);
  const accountSid = start.accountSid === undefined ? '' : sid(start.accountSid);
  if (callSid === undefined || accountSid === undefined) return fail('bad_start');
  // Only mu-law 8 kHz mono is spoken here; another format would be decoded as noise.
  const fmt = start.mediaFormat;
  if (fmt !== undefined) {
    if (!isRecord(fmt)) return fail('bad_media_format');
    if ((fmt.encoding !== undefined && fmt.encoding !== 'audio/x-mulaw') || (fmt.sampleRate !== undefined && Number(fmt.sampleRate) !== 8000) || (fmt.channels !== undefined && Number(fmt.channels) !== 1)) {
      return fail('bad_media_format');
    }
  }
  const customParameters: Record<string, string> = Object.create(null) as Record<string, string>;
  if (start.customParameters !== undefined) {
    if (!isRecord(start.customParameters)) return fail('bad_custom_parameters');
    const entries = Object.entries(start.customParameters);
    if (entries.length > MAX_CUSTOM_PARAMETERS) return fail('bad_custom_parameters');
    for (const [k, val] of entries) {
      if (k.length > MAX_PARAMETER_NAME_CHARS || typeof val !== 'string' || val.length > MAX_PARAMETER_VALUE_CHARS) return fail('bad_custom_parameters');
      customParameters[k] = val;
    }
  }
  return { ok: true, frame: { ...base, event: 'start', streamSid, callSid, accountSid, customParameters: { ...customParameters } } };
}
