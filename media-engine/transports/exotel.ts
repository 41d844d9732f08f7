/**
 * Exotel Voicebot applet stream (shared/protocol/exotel-stream.ts): JSON text frames, base64 16-bit
 * linear PCM at 8 kHz. Exotel sends ~100 ms per `media` message: the transport cuts it into five
 * 20 ms frames, keyed by the media timestamp, so the jitter buffer holds up to 300 ms (two messages
 * in flight plus their jitter). Out: `media` of 100 ms (1,600 bytes: Exotel asks for at least 100 ms
 * per message, in multiples of 320 bytes; the rest of an utterance goes before its mark), `mark`
 * (echoed once played), `clear`. The session travels in the stream URL's
 * query, which Exotel also copies into `start.custom_parameters`.
 */
import { exotelClear, exotelMark, exotelMediaTemplate, parseExotelFrame } from '../../shared/protocol/exotel-stream.js';
import { jsonMediaTemplate, type CarrierProtocol } from './carrier-protocol.js';
import { keyByTimestamp, toCarrierParse } from './stream-frame-map.js';

export const exotelProtocol: CarrierProtocol = {
  carrier: 'exotel',
  format: { codec: 'l16', sampleRateHz: 8000 },
  marks: true,
  sessionParams: 'query',
  maxDepthMs: 300,
  multiFrameMedia: true,
  framesPerMessage: 5,
  multiFrameOut: true,
  parse: (text) => toCarrierParse(parseExotelFrame(text), keyByTimestamp),
  mediaTemplate: (sid, _fmt, frames) => {
    const { head, tail } = exotelMediaTemplate(sid);
    return jsonMediaTemplate(head, tail, 320 * frames);
  },
  clearFrame: (sid) => exotelClear(sid),
  markFrame: (sid, name) => exotelMark(sid, name),
};
