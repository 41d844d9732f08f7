/**
 * Plivo Audio Streams, bidirectional (shared/protocol/plivo-stream.ts): JSON text frames, mu-law
 * 8 kHz, 20 ms per `media`; out `playAudio`, `checkpoint` (echoed as `playedStream` once played),
 * `clearAudio`. The session comes in the `start` frame's `extra_headers` and, as a fallback, in the
 * stream URL's query (`sessionParams: 'query'`: start values win).
 */
import { parsePlivoFrame, plivoCheckpoint, plivoClearAudio, plivoPlayAudioTemplate } from '../../shared/protocol/plivo-stream.js';
import { jsonMediaTemplate, type CarrierProtocol } from './carrier-protocol.js';
import { keyByChunk, toCarrierParse } from './stream-frame-map.js';

export const plivoProtocol: CarrierProtocol = {
  carrier: 'plivo',
  format: { codec: 'pcmu', sampleRateHz: 8000 },
  marks: true,
  sessionParams: 'query',
  parse: (text) => toCarrierParse(parsePlivoFrame(text), keyByChunk),
  multiFrameOut: true,
  mediaTemplate: (sid, _fmt, frames) => {
    const { head, tail } = plivoPlayAudioTemplate(sid);
    return jsonMediaTemplate(head, tail, 160 * frames);
  },
  clearFrame: (sid) => plivoClearAudio(sid),
  markFrame: (sid, name) => plivoCheckpoint(sid, name),
};
