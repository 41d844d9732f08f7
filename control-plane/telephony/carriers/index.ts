/**
 * The carrier adapters of this deployment (types.ts is the interface). A carrier listed in
 * CARRIERS without an adapter here validates in requests and answers 400 "not supported yet" at dial.
 */
import type { Config } from '../../../shared/config.js';
import { createExotelAdapter } from './exotel.js';
import { createPlivoAdapter } from './plivo.js';
import { createSignalwireAdapter } from './signalwire.js';
import { createTelnyxAdapter } from './telnyx.js';
import { createTwilioAdapter } from './twilio.js';
import { createVonageAdapter } from './vonage.js';
import { CARRIERS, type CarrierAdapter, type CarrierName } from './types.js';

export * from './types.js';

export type CarrierAdapters = ReadonlyMap<CarrierName, CarrierAdapter>;

/** Each supported carrier's adapter; `config` is read per request (tests swap base URLs). */
export function createCarrierAdapters(config: () => Config): CarrierAdapters {
  const list: CarrierAdapter[] = [createTwilioAdapter(config), createTelnyxAdapter(config), createSignalwireAdapter(config), createPlivoAdapter(config), createVonageAdapter(config), createExotelAdapter(config)];
  return new Map(list.map((a) => [a.id, a]));
}

export function isCarrierName(v: string): v is CarrierName {
  return (CARRIERS as readonly string[]).includes(v);
}
