/**
 * SignalWire media streams: the Twilio Media Streams protocol (LaML `<Connect><Stream>`, same
 * `start` / `media` / `mark` / `dtmf` / `stop` frames, `clear` and `mark` back), served on its
 * own route so the call's carrier is known from the socket.
 */
import { twilioCompatibleProtocol } from './twilio.js';

export const signalwireProtocol = twilioCompatibleProtocol('signalwire');
