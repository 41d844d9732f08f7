/**
 * Exotel Voicebot applet stream (bidirectional, docs/telephony.md "Exotel"): JSON text frames both
 * ways, snake_case, audio as base64 signed 16-bit little-endian PCM ("slin") at 8 kHz mono.
 *
 * In: `connected`, `start` {stream_sid, start: {stream_sid, call_sid, account_sid, from, to,
 * custom_parameters, media_format: {encoding, sample_rate, bit_rate}}}, `media` {media: {chunk,
 * timestamp, payload}} (about 100 ms per frame, a multiple of 320 bytes), `dtmf` {dtmf: {digit,
 * duration}}, `mark` {mark: {name}} (audio before our mark has played), `stop`.
 * Out: `media` {stream_sid, media: {payload}} (Exotel wants at least 100 ms = 3,200 bytes per
 * message and multiples of 320 bytes), `mark` {stream_sid, mark: {name}}, `clear` {stream_sid}.
 *
 * Counters may be digit strings or numbers; our session comes in `custom_parameters` (Exotel copies
 * the applet URL's query parameters there).
 */
import { MAX_CARRIER_FRAME_CHARS, MAX_CUSTOM_PARAMETERS, MAX_MARK_NAME_CHARS, MAX_PARAMETER_NAME_CHARS, MAX_PARAMETER_VALUE_CHARS, parseCounter } from './twilio-media.js';
import { boundedParams, boundedString, DTMF_DIGIT, fail, isBase64Payload, isRecord, ok, parseObject, STREAM_ID, type StreamParse } from './stream-frames.js';

/** Exotel sends ~100 ms per `media` (1,600 bytes at 8 kHz); up to 500 ms is accepted, more is not a live stream. */
export const EXOTEL_MAX_MEDIA_BYTES = 8000;
/** Outbound: Exotel's minimum chunk is 100 ms (3,200 bytes at 8 kHz); we send exactly that. */
export const EXOTEL_OUT_FRAMES_PER_MESSAGE = 5;

const PARAM_LIMITS = { count: MAX_CUSTOM_PARAMETERS, name: MAX_PARAMETER_NAME_CHARS, value: MAX_PARAMETER_VALUE_CHARS };

export function parseExotelFrame(text: string): StreamParse {
  const v = parseObject(text, MAX_CARRIER_FRAME_CHARS);
  if (typeof v === 'string') return fail(v);
  if (typeof v.event !== 'string') return fail('bad_event');
  if (v.event === 'connected') return ok({ event: 'ignored' });
  if (v.sequence_number !== undefined && parseCounter(v.sequence_number) === undefined) return fail('bad_sequence_number');
  if (v.stream_sid !== undefined && (typeof v.stream_sid !== 'string' || !STREAM_ID.test(v.stream_sid))) return fail('bad_stream_sid');
  switch (v.event) {
    case 'media': {
      const m = v.media;
      if (!isRecord(m)) return fail('bad_payload');
      const chunk = m.chunk === undefined ? undefined : parseCounter(m.chunk);
      if (m.chunk !== undefined && chunk === undefined) return fail('bad_chunk');
      const timestampMs = m.timestamp === undefined ? undefined : parseCounter(m.timestamp);
      if (m.timestamp !== undefined && timestampMs === undefined) return fail('bad_timestamp');
      if (!isBase64Payload(m.payload, EXOTEL_MAX_MEDIA_BYTES)) return fail('bad_payload');
      return ok({ event: 'media', chunk, timestampMs, payload: m.payload });
    }
    case 'start': {
      const s = v.start;
      if (!isRecord(s)) return fail('bad_start');
      const streamId = s.stream_sid ?? v.stream_sid;
      const callId = s.call_sid ?? '';
      if (typeof streamId !== 'string' || !STREAM_ID.test(streamId)) return fail('bad_stream_sid');
      if (typeof callId !== 'string' || (callId !== '' && !STREAM_ID.test(callId))) return fail('bad_start');
      const fmt = s.media_format;
      if (fmt !== undefined) {
        if (!isRecord(fmt)) return fail('bad_media_format');
        // 8 kHz is the applet's default and what we ask for; 16/24 kHz (`?sample-rate=`) are not spoken here.
        if (fmt.sample_rate !== undefined && Number(fmt.sample_rate) !== 8000) return fail('bad_media_format');
        if (fmt.bit_rate !== undefined && !/^(16|128kbps)$/.test(String(fmt.bit_rate))) return fail('bad_media_format');
      }
      const params = s.custom_parameters === undefined ? {} : boundedParams(s.custom_parameters, PARAM_LIMITS);
      if (!params) return fail('bad_custom_parameters');
      return ok({ event: 'start', streamId, callId, customParameters: params, format: { encoding: 'l16', sampleRateHz: 8000 } });
    }
    case 'dtmf': {
      const d = isRecord(v.dtmf) ? v.dtmf.digit : undefined;
      const digit = typeof d === 'number' ? String(d) : d;
      return typeof digit === 'string' && DTMF_DIGIT.test(digit) ? ok({ event: 'dtmf', digit }) : fail('bad_dtmf');
    }
    case 'mark': {
      const name = isRecord(v.mark) ? boundedString(v.mark.name, MAX_MARK_NAME_CHARS) : undefined;
      return name ? ok({ event: 'mark', name }) : fail('bad_mark');
    }
    case 'stop':
      return ok({ event: 'stop' });
    default:
      return ok({ event: 'unknown' });
  }
}

// ------------------------------------------------------------------ out

export function exotelMediaTemplate(streamId: string): { head: string; tail: string } {
  return { head: `{"event":"media","stream_sid":${JSON.stringify(streamId)},"media":{"payload":"`, tail: '"}}' };
}

export function exotelMark(streamId: string, name: string): string {
  return JSON.stringify({ event: 'mark', stream_sid: streamId, mark: { name } });
}

export function exotelClear(streamId: string): string {
  return JSON.stringify({ event: 'clear', stream_sid: streamId });
}
