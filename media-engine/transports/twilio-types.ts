/**
 * The Twilio names of the carrier transport's public shapes (carrier-types.ts): Twilio was the
 * first carrier and tests, benchmarks and the node still use these names.
 */
export type {
  CarrierSocket as TwilioSocket,
  CarrierAudioSink as TwilioAudioSink,
  CarrierEvent as TwilioEvent,
  CarrierTransportOptions as TwilioTransportOptions,
  CarrierTransportStats as TwilioTransportStats,
} from './carrier-types.js';
