/**
 * Vonage Voice API websocket (shared/protocol/vonage-stream.ts): raw 16-bit linear PCM in binary
 * frames of 20 ms both ways, at the rate our NCCO asked for (`audio/l16;rate=8000`, 320-byte frames,
 * the default; or `rate=16000`, 640 bytes, the workspace's wideband option: docs/telephony.md
 * "Vonage"), JSON text for events (`websocket:connected` is the start, with the content-type and our
 * headers) and commands (`notify` for marks, `clear`). The stream runs at the rate its
 * `websocket:connected` declares, and the actor with it: 8 kHz takes the narrowband path of the other
 * carriers (VAD and ASR at 8 kHz), 16 kHz the browser's; any other content-type closes the socket.
 * Binary frames carry no counter: the transport numbers them in arrival order.
 */
import { parseVonageBinary, parseVonageText, vonageNotify, VONAGE_CLEAR } from '../../shared/protocol/vonage-stream.js';
import type { CarrierProtocol } from './carrier-protocol.js';
import { keyByArrival, toCarrierParse } from './stream-frame-map.js';

export const vonageProtocol: CarrierProtocol = {
  carrier: 'vonage',
  // Our NCCO asks for audio/l16 at 8 kHz (default) or 16 kHz; websocket:connected says which.
  format: { codec: 'l16', sampleRateHz: 8000 },
  sampleRatesHz: [8000, 16000],
  marks: true,
  sessionParams: 'query',
  parse: (text) => toCarrierParse(parseVonageText(text), keyByArrival),
  parseBinary: (bytes) => toCarrierParse(parseVonageBinary(bytes), keyByArrival),
  mediaTemplate: () => ({ kind: 'binary' }),
  clearFrame: () => VONAGE_CLEAR,
  markFrame: (_sid, name) => vonageNotify(name),
};
