/**
 * Plivo Audio Streams, bidirectional (`<Stream bidirectional="true">`, docs/telephony.md "Plivo"):
 * JSON text frames both ways, G.711 mu-law 8 kHz in 20 ms frames, base64.
 *
 * In: `start` {start: {callId, streamId, accountId, tracks, mediaFormat}, extra_headers}, `media`
 * {media: {track, timestamp, chunk, payload}}, `dtmf` {dtmf: {digit}}, `playedStream` {name} (the
 * echo of a `checkpoint`), `clearedAudio` (the echo of `clearAudio`), `stop`.
 * Out: `playAudio` {media: {contentType: audio/x-mulaw, sampleRate: 8000, payload}}, `checkpoint`
 * {streamId, name}, `clearAudio` {streamId}.
 *
 * Our session travels in the XML's `extraHeaders` ("session_id=...,agent_id=..."); Plivo hands it
 * back in `start.extra_headers`, as that string or as JSON, so both are read.
 */
import { MAX_CARRIER_FRAME_CHARS, MAX_CUSTOM_PARAMETERS, MAX_MARK_NAME_CHARS, MAX_MEDIA_PAYLOAD_BYTES, MAX_PARAMETER_NAME_CHARS, MAX_PARAMETER_VALUE_CHARS, parseCounter } from './twilio-media.js';
import { boundedParams, boundedString, DTMF_DIGIT, fail, isBase64Payload, isRecord, ok, parseObject, STREAM_ID, type StreamParse } from './stream-frames.js';

const PARAM_LIMITS = { count: MAX_CUSTOM_PARAMETERS, name: MAX_PARAMETER_NAME_CHARS, value: MAX_PARAMETER_VALUE_CHARS };

export function parsePlivoFrame(text: string): StreamParse {
  const v = parseObject(text, MAX_CARRIER_FRAME_CHARS);
  if (typeof v === 'string') return fail(v);
  if (typeof v.event !== 'string') return fail('bad_event');
  if (v.sequenceNumber !== undefined && parseCounter(v.sequenceNumber) === undefined) return fail('bad_sequence_number');
  if (v.streamId !== undefined && (typeof v.streamId !== 'string' || !STREAM_ID.test(v.streamId))) return fail('bad_stream_sid');
  switch (v.event) {
    case 'media': {
      const m = v.media;
      if (!isRecord(m)) return fail('bad_payload');
      if (m.track !== undefined && m.track !== 'inbound') return m.track === 'outbound' ? ok({ event: 'ignored' }) : fail('bad_track');
      const chunk = m.chunk === undefined ? undefined : parseCounter(m.chunk);
      if (m.chunk !== undefined && chunk === undefined) return fail('bad_chunk');
      // Plivo's timestamp is epoch milliseconds (13 digits): still a safe integer.
      const timestampMs = m.timestamp === undefined ? undefined : parseCounter(m.timestamp);
      if (m.timestamp !== undefined && timestampMs === undefined) return fail('bad_timestamp');
      if (!isBase64Payload(m.payload, MAX_MEDIA_PAYLOAD_BYTES)) return fail('bad_payload');
      return ok({ event: 'media', chunk, timestampMs, payload: m.payload });
    }
    case 'start': {
      const s = v.start;
      if (!isRecord(s)) return fail('bad_start');
      const streamId = s.streamId ?? v.streamId;
      const callId = s.callId ?? '';
      if (typeof streamId !== 'string' || !STREAM_ID.test(streamId)) return fail('bad_stream_sid');
      if (typeof callId !== 'string' || (callId !== '' && !STREAM_ID.test(callId))) return fail('bad_start');
      const fmt = s.mediaFormat;
      if (fmt !== undefined) {
        if (!isRecord(fmt)) return fail('bad_media_format');
        // Only mu-law 8 kHz is asked for in our XML; anything else would be decoded as noise.
        if ((fmt.encoding !== undefined && fmt.encoding !== 'audio/x-mulaw') || (fmt.sampleRate !== undefined && Number(fmt.sampleRate) !== 8000)) return fail('bad_media_format');
      }
      const params = parseExtraHeaders(v.extra_headers ?? s.extra_headers);
      if (!params) return fail('bad_custom_parameters');
      return ok({ event: 'start', streamId, callId, customParameters: params, format: { encoding: 'mulaw', sampleRateHz: 8000 } });
    }
    case 'dtmf': {
      const d = isRecord(v.dtmf) ? v.dtmf.digit : undefined;
      const digit = typeof d === 'number' ? String(d) : d;
      return typeof digit === 'string' && DTMF_DIGIT.test(digit) ? ok({ event: 'dtmf', digit }) : fail('bad_dtmf');
    }
    case 'playedStream': {
      const name = boundedString(v.name, MAX_MARK_NAME_CHARS);
      return name ? ok({ event: 'mark', name }) : fail('bad_mark');
    }
    case 'clearedAudio':
      return ok({ event: 'cleared' });
    case 'stop':
      return ok({ event: 'stop' });
    default:
      return ok({ event: 'unknown' });
  }
}

/**
 * `extra_headers`: a JSON object (or its string), or "k=v,k=v" / "k=v;k=v" (the XML attribute as
 * written). Undefined: malformed or over the bounds. Absent: no parameters.
 */
export function parseExtraHeaders(v: unknown): Record<string, string> | undefined {
  if (v === undefined || v === null || v === '') return {};
  if (isRecord(v)) return boundedParams(v, PARAM_LIMITS);
  if (typeof v !== 'string' || v.length > 4096) return undefined;
  const t = v.trim();
  if (t.startsWith('{')) {
    try {
      return boundedParams(JSON.parse(t), PARAM_LIMITS);
    } catch {
      return undefined;
    }
  }
  const out: Record<string, string> = {};
  for (const pair of t.split(/[,;]/)) {
    if (!pair.trim()) continue;
    const i = pair.indexOf('=');
    if (i <= 0) return undefined;
    out[pair.slice(0, i).trim()] = pair.slice(i + 1).trim();
  }
  return boundedParams(out, PARAM_LIMITS);
}

/** The XML attribute value for `extraHeaders` (Plivo allows [A-Za-z0-9_-] names and values). */
export function plivoExtraHeaders(params: Record<string, string>): string {
  return Object.entries(params)
    .map(([k, v]) => `${k}=${v}`)
    .join(',');
}

// ------------------------------------------------------------------ out

/** The fixed text around a `playAudio` payload: the transport rewrites the payload in place. */
export function plivoPlayAudioTemplate(streamId: string): { head: string; tail: string } {
  return { head: `{"event":"playAudio","streamId":${JSON.stringify(streamId)},"media":{"contentType":"audio/x-mulaw","sampleRate":8000,"payload":"`, tail: '"}}' };
}

export function plivoCheckpoint(streamId: string, name: string): string {
  return JSON.stringify({ event: 'checkpoint', streamId, name });
}

export function plivoClearAudio(streamId: string): string {
  return JSON.stringify({ event: 'clearAudio', streamId });
}
