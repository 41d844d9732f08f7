/**
 * Carrier simulator (Twilio-style): REST API, call progress callbacks, async AMD, TwiML execution,
 * and media streams that dial back into the engine with an impaired link. See docs/telephony.md
 * ("Carrier simulator") for usage from tests and `bench/`.
 */
export { CarrierSim, SimCall, type CalleeBehaviour, type CarrierSimOptions, type SentCallback, type SimCallStatus, type SimError } from './carrier.js';
export { MediaStreamCall, type MediaCallEvent, type MediaCallOptions } from './media-call.js';
export { ImpairedLink, type LinkOptions, type LinkStats } from './link.js';
export { createTicker, sharedTicker, type Ticker } from './ticker.js';
export { parseTwiml, streamOf, type TwimlNode } from './twiml.js';
export { mulberry32 } from './prng.js';
export { TelnyxSim, TelnyxCall, type TelnyxSimOptions } from './telnyx.js';

/** A fresh Twilio-shaped account SID (`AC` + 32 hex). */
export function simAccountSid(): string {
  let s = 'AC';
  for (let i = 0; i < 32; i++) s += Math.floor(Math.random() * 16).toString(16);
  return s;
}
