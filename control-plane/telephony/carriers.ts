/**
 * The six carrier identifiers the API accepts, which of them this deployment drives (those with an
 * adapter, carriers/index.ts), their capabilities, and detection of the carrier from an account id.
 */
import { AMD_POLICIES, AMD_TIMEOUT_S } from '../../shared/voice/amd.js';
import { CARRIERS, type CarrierAdapters, type CarrierName } from './carriers/index.js';

export { CARRIERS, isCarrierName, type CarrierName } from './carriers/index.js';

const DISPLAY: Record<CarrierName, string> = {
  twilio: 'Twilio',
  telnyx: 'Telnyx',
  plivo: 'Plivo',
  vonage: 'Vonage',
  signalwire: 'SignalWire',
  exotel: 'Exotel',
};

/** Media on the wire of each carrier's stream (docs/protocols.md section 4); an adapter's own wins. */
const MEDIA: Record<CarrierName, { encoding: string; sampleRateHz: number }> = {
  twilio: { encoding: 'mulaw', sampleRateHz: 8000 },
  telnyx: { encoding: 'mulaw', sampleRateHz: 8000 },
  plivo: { encoding: 'mulaw', sampleRateHz: 8000 },
  vonage: { encoding: 'pcm_s16le', sampleRateHz: 8000 },
  signalwire: { encoding: 'mulaw', sampleRateHz: 8000 },
  exotel: { encoding: 'pcm_s16le', sampleRateHz: 8000 },
};

/**
 * The carrier an account id belongs to, from its shape: Twilio `AC` + 32 hex, Plivo `MA`/`SA` +
 * 18 alphanumerics, SignalWire a UUID project id, Telnyx `KEY...` API keys, Vonage 8 hex
 * characters; anything else non-empty is taken for Twilio.
 */
export function detectCarrier(accountSid: string): CarrierName | undefined {
  const s = accountSid.trim();
  if (!s) return undefined;
  if (/^AC[0-9a-f]{32}$/i.test(s)) return 'twilio';
  if (/^(MA|SA)[A-Z0-9]{18}$/.test(s)) return 'plivo';
  if (/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(s)) return 'signalwire';
  if (/^KEY[0-9A-Za-z_]+$/.test(s)) return 'telnyx';
  if (/^[0-9a-f]{8}$/i.test(s)) return 'vonage';
  return 'twilio';
}

export function providersView(adapters: CarrierAdapters) {
  return {
    providers: CARRIERS.map((name) => {
      const a = adapters.get(name);
      const media = a?.media ?? MEDIA[name];
      return { name, displayName: a?.displayName ?? DISPLAY[name], supported: Boolean(a), mediaEncoding: media.encoding, sampleRateHz: media.sampleRateHz };
    }),
    defaultProvider: 'twilio',
  };
}

export function capabilitiesView(adapters: CarrierAdapters) {
  return {
    carriers: CARRIERS.map((provider) => {
      const c = adapters.get(provider)?.capabilities;
      return {
        provider,
        supported: Boolean(c),
        inbound: c?.inbound ?? false,
        outbound: c?.outbound ?? false,
        answeringMachineDetection: c?.answeringMachineDetection ?? false,
        coldTransfer: c?.coldTransfer ?? false,
        recording: c?.recording ?? false,
        dtmf: c?.dtmf ?? false,
        bargeInClear: c?.bargeInClear ?? false,
        playbackMarks: c?.playbackMarks ?? false,
        signatureVerification: c?.signatureVerification ?? false,
      };
    }),
    amdPolicies: [...AMD_POLICIES],
    callDirections: ['inbound', 'outbound', 'both'],
    amdVerdictTimeoutMinS: AMD_TIMEOUT_S.min,
    amdVerdictTimeoutMaxS: AMD_TIMEOUT_S.max,
    amdVerdictTimeoutDefaultS: AMD_TIMEOUT_S.default,
  };
}
