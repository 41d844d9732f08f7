/**
 * Plivo, Vonage and Exotel frames (shared/protocol/<carrier>-stream.ts, parsed to `StreamFrame`)
 * mapped onto the transport's normalized `CarrierFrame` (Twilio's vocabulary), so the generic
 * carrier transport runs them unchanged. What each carrier counts differs, so the frame keys are
 * made here: `chunk` counts 20 ms frames from 1, `timestampMs` is media time from 0 at `start`.
 */
import type { CarrierParse } from '../../shared/protocol/twilio-media.js';
import type { StreamFrame, StreamParse } from '../../shared/protocol/stream-frames.js';

export type FrameKey = (m: Extract<StreamFrame, { event: 'media' }>) => { chunk: number; timestampMs: number } | undefined;

/** One frame per message, counted by the carrier's `chunk` from 1 (Plivo): its timestamp is not needed. */
export const keyByChunk: FrameKey = (m) => (m.chunk === undefined || m.chunk < 1 ? undefined : { chunk: m.chunk, timestampMs: (m.chunk - 1) * 20 });

/** Several frames per message, placed by the media timestamp (ms from the stream's start; Exotel). */
export const keyByTimestamp: FrameKey = (m) => {
  if (m.timestampMs !== undefined) return { chunk: Math.floor(m.timestampMs / 20) + 1, timestampMs: m.timestampMs };
  return m.chunk === undefined || m.chunk < 1 ? undefined : { chunk: (m.chunk - 1) * 5 + 1, timestampMs: (m.chunk - 1) * 100 };
};

/** Binary frames without counters (Vonage): the transport numbers them in arrival order. */
export const keyByArrival: FrameKey = () => ({ chunk: 0, timestampMs: 0 });

export function toCarrierParse(r: StreamParse, key: FrameKey): CarrierParse {
  if (!r.ok) return r;
  const f = r.frame;
  switch (f.event) {
    case 'start': {
      const format = f.format ? { codec: f.format.encoding === 'mulaw' ? ('pcmu' as const) : ('l16' as const), sampleRateHz: f.format.sampleRateHz } : undefined;
      // Vonage names no stream: the call id (our header) or a fixed name stands in (outgoing frames carry none).
      return { ok: true, frame: { event: 'start', streamSid: f.streamId || f.callId || 'stream', callSid: f.callId, accountSid: '', customParameters: f.customParameters, format } };
    }
    case 'media': {
      const k = key(f);
      if (!k) return { ok: false, reason: 'bad_chunk' };
      return { ok: true, frame: { event: 'media', track: 'inbound', chunk: k.chunk, timestampMs: k.timestampMs, payload: f.payload } };
    }
    case 'mark':
      return { ok: true, frame: { event: 'mark', name: f.name } };
    case 'dtmf':
      return { ok: true, frame: { event: 'dtmf', digit: f.digit } };
    case 'stop':
      return { ok: true, frame: { event: 'stop' } };
    // Acknowledgements that ask nothing of us (clear confirmed, a foreign notify): a no-op event.
    case 'cleared':
    case 'ignored':
      return { ok: true, frame: { event: 'connected' } };
    default:
      return { ok: true, frame: { event: 'unknown' } };
  }
}
