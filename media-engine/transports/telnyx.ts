/**
 * Telnyx media streaming over WebSocket (Call Control `stream_url`, bidirectional `rtp` mode):
 * JSON text frames, base64 RTP payloads (no headers) of PCMU or PCMA at 8 kHz.
 *
 * In:  `connected`; `start` {`stream_id`, `start`: {`call_control_id`, `media_format`:
 *      {`encoding`: PCMU|PCMA, `sample_rate`, `channels`}, `custom_parameters`?}};
 *      `media` {`sequence_number`, `stream_id`, `media`: {`track`, `chunk`, `timestamp`, `payload`}};
 *      `dtmf` {`dtmf`: {`digit`}}; `mark` {`mark`: {`name`}}; `stop`; `error` (ignored, counted).
 * Out: `{"event":"media","media":{"payload":…}}`, `{"event":"clear"}`, `{"event":"mark","mark":{"name":…}}`.
 *
 * Telnyx does not promise frame order: the jitter buffer is keyed by `media.chunk` as for Twilio.
 * The session parameters travel in the stream URL's query (`sessionParams: 'query'`) and, when
 * present, in `start.custom_parameters` (an object or a `[{name, value}]` list).
 * Every field is validated like Twilio's (shared/protocol/twilio-media.ts): counters are safe
 * integers, payloads bounded base64, ids bounded.
 */
import {
  MAX_CARRIER_FRAME_CHARS,
  MAX_CUSTOM_PARAMETERS,
  MAX_MARK_NAME_CHARS,
  MAX_MEDIA_PAYLOAD_CHARS,
  MAX_PARAMETER_NAME_CHARS,
  MAX_PARAMETER_VALUE_CHARS,
  parseCounter,
  type CarrierInvalidReason,
  type CarrierParse,
} from '../../shared/protocol/twilio-media.js';
import { isRecord, parseObject } from '../../shared/protocol/stream-frames.js';
import { jsonMediaTemplate, type CarrierProtocol } from './carrier-protocol.js';
import { telnyxMediaDialect } from './json-media-scan.js';

const KNOWN = new Set(['connected', 'start', 'media', 'mark', 'dtmf', 'stop']);
/** Telnyx stream ids are UUIDs, call control ids `v2:` + base64url: bounded, no quotes or spaces. */
const ID = /^[A-Za-z0-9_:.=+/-]{1,128}$/;
const BASE64 = /^[A-Za-z0-9+/]+={0,2}$/;
const DTMF = /^[0-9A-Da-d*#]$/;

const fail = (reason: CarrierInvalidReason): CarrierParse => ({ ok: false, reason });

export function parseTelnyxFrame(text: string): CarrierParse {
  const v = parseObject(text, MAX_CARRIER_FRAME_CHARS);
  if (typeof v === 'string') return fail(v);
  if (typeof v.event !== 'string') return fail('bad_event');
  if (!KNOWN.has(v.event)) return { ok: true, frame: { event: 'unknown' } };
  if (v.event === 'connected') return { ok: true, frame: { event: 'connected' } };
  let sequenceNumber: number | undefined;
  if (v.sequence_number !== undefined) {
    sequenceNumber = parseCounter(v.sequence_number);
    if (sequenceNumber === undefined) return fail('bad_sequence_number');
  }
  let streamSid: string | undefined;
  if (v.stream_id !== undefined) {
    if (typeof v.stream_id !== 'string' || !ID.test(v.stream_id)) return fail('bad_stream_sid');
    streamSid = v.stream_id;
  }
  switch (v.event) {
    case 'media': {
      const m = v.media;
      if (!isRecord(m)) return fail('bad_payload');
      let track: 'inbound' | 'outbound' = 'inbound';
      if (m.track !== undefined) {
        if (m.track !== 'inbound' && m.track !== 'outbound') return fail('bad_track');
        track = m.track;
      }
      const chunk = parseCounter(m.chunk);
      if (chunk === undefined) return fail('bad_chunk');
      const timestampMs = parseCounter(m.timestamp);
      if (timestampMs === undefined) return fail('bad_timestamp');
      const p = m.payload;
      if (typeof p !== 'string' || p.length === 0 || p.length > MAX_MEDIA_PAYLOAD_CHARS || p.length % 4 !== 0 || !BASE64.test(p)) return fail('bad_payload');
      return { ok: true, frame: { event: 'media', sequenceNumber, streamSid, track, chunk, timestampMs, payload: p } };
    }
    case 'start':
      return parseStart(v.start, sequenceNumber, streamSid);
    case 'mark': {
      const name = isRecord(v.mark) && typeof v.mark.name === 'string' && v.mark.name.length <= MAX_MARK_NAME_CHARS ? v.mark.name : '';
      return name ? { ok: true, frame: { event: 'mark', sequenceNumber, streamSid, name } } : fail('bad_mark');
    }
    case 'dtmf': {
      const digit = isRecord(v.dtmf) ? v.dtmf.digit : undefined;
      return typeof digit === 'string' && DTMF.test(digit) ? { ok: true, frame: { event: 'dtmf', sequenceNumber, streamSid, digit } } : fail('bad_dtmf');
    }
    default:
      return { ok: true, frame: { event: 'stop', sequenceNumber, streamSid } };
  }
}

function parseStart(start: unknown, sequenceNumber: number | undefined, streamSid: string | undefined): CarrierParse {
  if (!isRecord(start) || !streamSid) return fail(streamSid ? 'bad_start' : 'bad_stream_sid');
  const cc = start.call_control_id;
  if (cc !== undefined && (typeof cc !== 'string' || !ID.test(cc))) return fail('bad_start');
  let format: { codec: 'pcmu' | 'pcma'; sampleRateHz: number } | undefined;
  const f = start.media_format;
  if (f !== undefined) {
    if (!isRecord(f)) return fail('bad_media_format');
    const enc = typeof f.encoding === 'string' ? f.encoding.toUpperCase() : 'PCMU';
    if ((enc !== 'PCMU' && enc !== 'PCMA') || (f.sample_rate !== undefined && Number(f.sample_rate) !== 8000) || (f.channels !== undefined && Number(f.channels) !== 1)) {
      return fail('bad_media_format');
    }
    format = { codec: enc === 'PCMA' ? 'pcma' : 'pcmu', sampleRateHz: 8000 };
  }
  const customParameters: Record<string, string> = {};
  const cp = start.custom_parameters;
  if (cp !== undefined) {
    const entries: Array<[unknown, unknown]> = Array.isArray(cp) ? cp.map((e) => (isRecord(e) ? [e.name, e.value] : [undefined, undefined])) : isRecord(cp) ? Object.entries(cp) : [];
    if ((!Array.isArray(cp) && !isRecord(cp)) || entries.length > MAX_CUSTOM_PARAMETERS) return fail('bad_custom_parameters');
    for (const [k, val] of entries) {
      if (typeof k !== 'string' || k.length > MAX_PARAMETER_NAME_CHARS || typeof val !== 'string' || val.length > MAX_PARAMETER_VALUE_CHARS) return fail('bad_custom_parameters');
      customParameters[k] = val;
    }
  }
  return { ok: true, frame: { event: 'start', sequenceNumber, streamSid, callSid: typeof cc === 'string' ? cc : '', accountSid: '', customParameters, format } };
}

export const telnyxProtocol: CarrierProtocol = {
  carrier: 'telnyx',
  format: { codec: 'pcmu', sampleRateHz: 8000 },
  marks: true,
  sessionParams: 'query',
  parse: parseTelnyxFrame,
  jsonMedia: telnyxMediaDialect,
  mediaTimestamps: true,
  // Bidirectional RTP mode: the stream is implied by the socket, so no stream id in outgoing frames.
  multiFrameOut: true,
  mediaTemplate: (_sid, fmt, frames) => jsonMediaTemplate('{"event":"media","media":{"payload":"', '"}}', (fmt.codec === 'l16' ? 320 : 160) * frames),
  clearFrame: () => '{"event":"clear"}',
  markFrame: (_sid, name) => JSON.stringify({ event: 'mark', mark: { name } }),
};
