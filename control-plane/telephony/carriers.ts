/**
 * The six carrier identifiers the API accepts, which of them this deployment can drive (Twilio
 * only), their capabilities, and detection of the carrier from the resolved account credentials.
 */
import { AMD_POLICIES, AMD_TIMEOUT_S } from '../../shared/voice/amd.js';

export const CARRIERS = ['twilio', 'telnyx', 'plivo', 'vonage', 'signalwire', 'exotel'] as const;
export type CarrierName = (typeof CARRIERS)[number];

export const SUPPORTED_CARRIERS: ReadonlySet<CarrierName> = new Set(['twilio']);

const DISPLAY: Record<CarrierName, string> = {
  twilio: 'Twilio',
  telnyx: 'Telnyx',
  plivo: 'Plivo',
  vonage: 'Vonage',
  signalwire: 'SignalWire',
  exotel: 'Exotel',
};

/** Media on the wire of each carrier's stream (docs/protocols.md section 4); informational for the unsupported ones. */
const MEDIA: Record<CarrierName, { encoding: string; sampleRateHz: number }> = {
  twilio: { encoding: 'mulaw', sampleRateHz: 8000 },
  telnyx: { encoding: 'mulaw', sampleRateHz: 8000 },
  plivo: { encoding: 'mulaw', sampleRateHz: 8000 },
  vonage: { encoding: 'pcm_s16le', sampleRateHz: 16000 },
  signalwire: { encoding: 'mulaw', sampleRateHz: 8000 },
  exotel: { encoding: 'pcm_s16le', sampleRateHz: 8000 },
};

export function isCarrierName(v: string): v is CarrierName {
  return (CARRIERS as readonly string[]).includes(v);
}

/**
 * The carrier an account id belongs to, from its shape: Twilio `AC` + 32 hex, Plivo `MA`/`SA` +
 * 18 alphanumerics, SignalWire a UUID project id, Telnyx `KEY...` API keys, Vonage 8 hex
 * characters; anything else non-empty is taken for Twilio (the only one we drive).
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

export function providersView() {
  return {
    providers: CARRIERS.map((name) => ({
      name,
      displayName: DISPLAY[name],
      supported: SUPPORTED_CARRIERS.has(name),
      mediaEncoding: MEDIA[name].encoding,
      sampleRateHz: MEDIA[name].sampleRateHz,
    })),
    defaultProvider: 'twilio',
  };
}

export function capabilitiesView() {
  return {
    carriers: CARRIERS.map((provider) => {
      const on = SUPPORTED_CARRIERS.has(provider);
      return {
        provider,
        supported: on,
        inbound: on,
        outbound: on,
        answeringMachineDetection: on,
        coldTransfer: on,
        recording: on,
        dtmf: on,
        bargeInClear: on,
        playbackMarks: on,
        signatureVerification: on,
      };
    }),
    amdPolicies: [...AMD_POLICIES],
    callDirections: ['inbound', 'outbound', 'both'],
    amdVerdictTimeoutMinS: AMD_TIMEOUT_S.min,
    amdVerdictTimeoutMaxS: AMD_TIMEOUT_S.max,
    amdVerdictTimeoutDefaultS: AMD_TIMEOUT_S.default,
  };
}
