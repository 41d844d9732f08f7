/**
 * Plivo end to end against its simulator (test/carrier-sim/stream-carrier.ts): the call scenarios of
 * the Twilio telephony tests (test/carrier-sim/stream-suite.ts) on Plivo's REST API, call-control
 * documents, signatures and media stream.
 */
import { defineStreamCarrierSuite } from '../carrier-sim/stream-suite.js';

defineStreamCarrierSuite('plivo', { amd: true, transfer: true });
