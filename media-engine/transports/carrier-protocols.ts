/**
 * The carrier media stream protocols this node serves, one socket route each
 * (`/api/v1/voice/ws/<carrier>/{id}`, carrier-route.ts). Adding a carrier: its protocol here.
 */
import type { CarrierProtocol } from './carrier-protocol.js';
import { exotelProtocol } from './exotel.js';
import { plivoProtocol } from './plivo.js';
import { signalwireProtocol } from './signalwire.js';
import { telnyxProtocol } from './telnyx.js';
import { twilioProtocol } from './twilio.js';
import { vonageProtocol } from './vonage.js';

export const PROTOCOLS: readonly CarrierProtocol[] = [twilioProtocol, signalwireProtocol, telnyxProtocol, plivoProtocol, vonageProtocol, exotelProtocol];
