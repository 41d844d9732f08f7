/**
 * SignalWire: the Twilio-compatible LaML REST API (`{space}/api/laml/2010-04-01/Accounts/{project}
 * /Calls.json`, basic auth project id : API token), LaML documents (TwiML) and Twilio-format media
 * streams; webhooks signed like Twilio's (HMAC-SHA1 over URL + sorted form) with the project's
 * signing key, in `X-SignalWire-Signature` (also sent as `X-Twilio-Signature`).
 *
 * Credentials: `account_sid` = project id (a UUID), `auth_token` = API token, `space_url`
 * (https://example.signalwire.com), `signing_key` (default: the API token, which older spaces sign with),
 * `person_uri` (the portal hand-off's SIP endpoint, default `sip:{identity}@<space>.sip.signalwire.com`).
 * Environment fallback: SIGNALWIRE_PROJECT_ID, SIGNALWIRE_API_TOKEN, SIGNALWIRE_SPACE_URL,
 * SIGNALWIRE_SIGNING_KEY, SIGNALWIRE_PERSON_URI.
 */
import type { Config } from '../../../shared/config.js';
import { trimBase } from './http.js';
import { twilioCompatible } from './twilio.js';
import { personUriField } from './person.js';
import { AppError } from '../../../shared/errors.js';
import type { CarrierAccount, CarrierAdapter } from './types.js';

const PROJECT = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const SPACE_URL = /^https?:\/\/[A-Za-z0-9.-]+(:\d+)?\/?$/;
/**
 * A workspace's space (tenant input): a SignalWire host only, so a workspace cannot point our
 * authenticated API calls at another address. The operator's SIGNALWIRE_SPACE_URL may be any host
 * (a test double, a proxy).
 */
const WORKSPACE_SPACE_URL = /^https:\/\/[A-Za-z0-9-]+\.signalwire\.com\/?$/;

export function createSignalwireAdapter(config: () => Config): CarrierAdapter {
  return twilioCompatible(
    {
      id: 'signalwire',
      displayName: 'SignalWire',
      credentialFields: [
        { name: 'account_sid', secret: false, required: true, pattern: PROJECT },
        { name: 'auth_token', secret: true, required: true },
        { name: 'space_url', secret: false, required: true, pattern: WORKSPACE_SPACE_URL },
        { name: 'signing_key', secret: true, required: false },
        personUriField({ app: false }),
      ],
      detect: (sid) => PROJECT.test(sid),
      envAccount: (c) => {
        const e = c.carrierEnv;
        if (!e.SIGNALWIRE_PROJECT_ID && !e.SIGNALWIRE_API_TOKEN && !e.SIGNALWIRE_SPACE_URL && !e.SIGNALWIRE_SIGNING_KEY && !e.SIGNALWIRE_PERSON_URI) return undefined;
        return {
          carrier: 'signalwire',
          accountSid: e.SIGNALWIRE_PROJECT_ID ?? '',
          authToken: e.SIGNALWIRE_API_TOKEN ?? '',
          extra: { space_url: e.SIGNALWIRE_SPACE_URL ?? '', signing_key: e.SIGNALWIRE_SIGNING_KEY ?? '', person_uri: e.SIGNALWIRE_PERSON_URI ?? '' },
        };
      },
      apiRoot: (a: CarrierAccount) => {
        const space = a.extra.space_url ?? '';
        // Incomplete credentials, not a carrier refusal: the same 503 as no credentials at all.
        if (!SPACE_URL.test(space)) throw new AppError('SERVICE_UNAVAILABLE', 'no usable carrier credentials: the SignalWire account has no valid space_url (https://<space>.signalwire.com)', { retryAfterS: 30 });
        return `${trimBase(space)}/api/laml/2010-04-01`;
      },
      signatureHeaders: ['x-signalwire-signature', 'x-twilio-signature'],
      signingKey: (a, c) => a?.extra.signing_key || a?.authToken || c.carrierEnv.SIGNALWIRE_SIGNING_KEY || c.carrierEnv.SIGNALWIRE_API_TOKEN || '',
      verifyEnabled: (c) => c.carrierEnv.SIGNALWIRE_VERIFY_SIGNATURE !== 'false',
      // LaML's <Dial> has no <Client> noun but <Sip>: the person's SIP endpoint, by default the
      // space's SIP domain (`<space>.sip.signalwire.com`) with the identity as its user name.
      person: { kind: 'sip', sipDefault: (a) => sipDomainOf(a.extra.space_url ?? '') },
    },
    config,
  );
}

/** `https://acme.signalwire.com` -> `sip:{identity}@acme.sip.signalwire.com`; '' for a space URL of another shape. */
export function sipDomainOf(spaceUrl: string): string {
  const m = /^https?:\/\/([a-z0-9-]+)\.signalwire\.com\/?$/i.exec(spaceUrl.trim());
  return m ? `sip:{identity}@${m[1]!.toLowerCase()}.sip.signalwire.com` : '';
}
