/**
 * Vonage Voice API WebSocket (NCCO `connect` to a `websocket` endpoint, docs/telephony.md
 * "Vonage"): audio as binary frames of raw signed 16-bit little-endian PCM, 20 ms each (640 bytes
 * at 16 kHz, 320 at 8 kHz), both ways; JSON text frames for events and commands.
 *
 * In: first `websocket:connected` {content-type: "audio/l16;rate=16000", ...the endpoint's
 * `headers`} (our session travels there: it is our `start`), binary audio, `websocket:dtmf`
 * {digit, duration} (or {dtmf: {digit}}), `websocket:notify` {payload} (the echo of our `notify`
 * once the audio sent before it has played), `websocket:cleared` (after our `clear`). No stop
 * event: the socket closes when the call ends.
 * Out: binary audio, `{"action":"notify","payload":{"mark":name}}`, `{"action":"clear"}`.
 */
import { MAX_CARRIER_FRAME_CHARS, MAX_CUSTOM_PARAMETERS, MAX_MARK_NAME_CHARS, MAX_PARAMETER_NAME_CHARS, MAX_PARAMETER_VALUE_CHARS } from './twilio-media.js';
import { boundedString, DTMF_DIGIT, fail, isRecord, ok, parseObject, type StreamAudioFormat, type StreamParse } from './stream-frames.js';

/** A 20 ms binary frame at 16 kHz; 8 kHz frames are half. Longer frames are cut, up to this. */
export const VONAGE_MAX_BINARY_BYTES = 4096;

const CONTENT_TYPE = /^audio\/l16;\s*rate=(8000|16000)$/i;

/** `audio/l16;rate=16000` -> the stream's format; undefined for anything else. */
export function vonageFormat(contentType: unknown): StreamAudioFormat | undefined {
  if (typeof contentType !== 'string') return undefined;
  const m = CONTENT_TYPE.exec(contentType.trim());
  return m ? { encoding: 'l16', sampleRateHz: Number(m[1]) as 8000 | 16000 } : undefined;
}

export function parseVonageText(text: string): StreamParse {
  const v = parseObject(text, MAX_CARRIER_FRAME_CHARS);
  if (typeof v === 'string') return fail(v);
  if (typeof v.event !== 'string') return fail('bad_event');
  switch (v.event) {
    case 'websocket:connected': {
      const format = vonageFormat(v['content-type']);
      if (!format) return fail('bad_media_format');
      // Everything else at the top level is the endpoint's `headers` object, echoed back.
      const params: Record<string, string> = {};
      let n = 0;
      for (const [k, val] of Object.entries(v)) {
        if (k === 'event' || k === 'content-type') continue;
        if (typeof val !== 'string') continue; // Vonage may add structured fields; only our string headers matter.
        if (++n > MAX_CUSTOM_PARAMETERS || k.length > MAX_PARAMETER_NAME_CHARS || val.length > MAX_PARAMETER_VALUE_CHARS) return fail('bad_custom_parameters');
        params[k] = val;
      }
      return ok({ event: 'start', streamId: params.call_id ?? '', callId: params.call_id ?? '', customParameters: params, format });
    }
    case 'websocket:dtmf': {
      const d = v.digit ?? (isRecord(v.dtmf) ? v.dtmf.digit : undefined);
      const digit = typeof d === 'number' ? String(d) : d;
      return typeof digit === 'string' && DTMF_DIGIT.test(digit) ? ok({ event: 'dtmf', digit }) : fail('bad_dtmf');
    }
    case 'websocket:notify': {
      const name = isRecord(v.payload) ? boundedString(v.payload.mark, MAX_MARK_NAME_CHARS) : undefined;
      // A notify we did not send (no mark) is nothing to us; a malformed mark is garbage.
      if (isRecord(v.payload) && v.payload.mark === undefined) return ok({ event: 'ignored' });
      return name ? ok({ event: 'mark', name }) : fail('bad_mark');
    }
    case 'websocket:cleared':
      return ok({ event: 'cleared' });
    default:
      return ok({ event: 'unknown' });
  }
}

/** One binary frame: audio (never empty, an even number of bytes, bounded). */
export function parseVonageBinary(bytes: Uint8Array): StreamParse {
  if (bytes.length === 0 || bytes.length % 2 !== 0) return fail('bad_payload');
  if (bytes.length > VONAGE_MAX_BINARY_BYTES) return fail('too_large');
  return ok({ event: 'media', payload: bytes });
}

// ------------------------------------------------------------------ out

export function vonageNotify(name: string): string {
  return JSON.stringify({ action: 'notify', payload: { mark: name } });
}

export const VONAGE_CLEAR = '{"action":"clear"}';
