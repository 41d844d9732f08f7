/**
 * Twilio Media Streams (docs/protocols.md section 1): JSON text frames both ways, G.711 mu-law
 * 8 kHz in 20 ms frames, base64; `clear` and `mark` echoes. The protocol is the parser in
 * shared/protocol/twilio-media.ts plus the preallocated `media` frame (twilio-media-frame.ts); the
 * state machine (jitter buffer, windows, marks) is the generic carrier transport's
 * (carrier-transport.ts; see NOTES.md for how it works). SignalWire speaks the same protocol.
 */
import type { Clock } from '../../shared/clock.js';
import { parseCarrierFrame } from '../../shared/protocol/twilio-media.js';
import type { CarrierProtocol } from './carrier-protocol.js';
import { CarrierTransport } from './carrier-transport.js';
import type { CarrierSocket, CarrierTransportOptions } from './carrier-types.js';
import { mediaFrameTemplate } from './twilio-media-frame.js';
import { twilioMediaDialect } from './json-media-scan.js';

// Re-exported so callers keep one import: the public shapes and the tested payload encoder.
export type { TwilioAudioSink, TwilioEvent, TwilioSocket, TwilioTransportOptions, TwilioTransportStats } from './twilio-types.js';
export { base64Into } from './twilio-media-frame.js';
export { MAX_BUFFERED_BYTES } from './carrier-transport.js';

/** The Twilio-compatible media stream protocol under a carrier name (`twilio`, `signalwire`). */
export function twilioCompatibleProtocol(carrier: string): CarrierProtocol {
  return {
    carrier,
    format: { codec: 'pcmu', sampleRateHz: 8000 },
    marks: true,
    sessionParams: 'start',
    parse: parseCarrierFrame,
    jsonMedia: twilioMediaDialect,
    mediaTimestamps: true,
    multiFrameOut: true,
    mediaTemplate: (sid, _fmt, frames) => mediaFrameTemplate(sid, frames),
    clearFrame: (sid) => JSON.stringify({ event: 'clear', streamSid: sid }),
    markFrame: (sid, name) => JSON.stringify({ event: 'mark', streamSid: sid, mark: { name } }),
  };
}

export const twilioProtocol: CarrierProtocol = twilioCompatibleProtocol('twilio');

/** The carrier transport speaking Twilio Media Streams. */
export class TwilioTransport extends CarrierTransport {
  constructor(ws: CarrierSocket, clock: Clock, opts: CarrierTransportOptions = {}) {
    super(ws, clock, twilioProtocol, opts);
  }
}
