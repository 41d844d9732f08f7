/**
 * Vonage Voice API websocket (shared/protocol/vonage-stream.ts): raw 16-bit linear PCM at 16 kHz in
 * binary frames of 20 ms (640 bytes) both ways, JSON text for events (`websocket:connected` is the
 * start, with our headers) and commands (`notify` for marks, `clear`). The actor runs at 16 kHz on
 * this transport (its rates follow the protocol's format): nothing is mu-law coded or resampled to
 * 8 kHz on the way. Binary frames carry no counter: the transport numbers them in arrival order.
 */
import { parseVonageBinary, parseVonageText, vonageNotify, VONAGE_CLEAR } from '../../shared/protocol/vonage-stream.js';
import type { CarrierProtocol } from './carrier-protocol.js';
import { keyByArrival, toCarrierParse } from './stream-frame-map.js';

export const vonageProtocol: CarrierProtocol = {
  carrier: 'vonage',
  // Our NCCO asks for audio/l16;rate=16000; a stream at another rate is refused at `start`.
  format: { codec: 'l16', sampleRateHz: 16000 },
  marks: true,
  sessionParams: 'query',
  parse: (text) => toCarrierParse(parseVonageText(text), keyByArrival),
  parseBinary: (bytes) => toCarrierParse(parseVonageBinary(bytes), keyByArrival),
  mediaTemplate: () => ({ kind: 'binary' }),
  clearFrame: () => VONAGE_CLEAR,
  markFrame: (_sid, name) => vonageNotify(name),
};
