/**
 * The person's address for a portal hand-off (issue 21 on every carrier that can, docs/telephony.md
 * "Hand-off to a person"). Each carrier names a person differently: Twilio a Voice SDK client
 * identity (`<Dial><Client>`), SignalWire, Telnyx and Plivo a SIP endpoint, Vonage a Client SDK
 * user (NCCO `app` endpoint) or a SIP URI. The identity is always `human-<human agent id>`; where
 * the address is a SIP URI (or the Vonage user needs another shape) the workspace's carrier account
 * holds a `person_uri` template with `{identity}` in it, e.g. `sip:{identity}@acme.sip.signalwire.com`.
 */
import type { CarrierAccount, CredentialField } from './types.js';

/** `{identity}` is replaced; the rest is a SIP (or `app:`) URI without XML/URL-breaking characters. */
const TEMPLATE = /^(sips?|app):[A-Za-z0-9_.@:;=+%{}-]*\{identity\}[A-Za-z0-9_.@:;=+%{}-]*$/;
const SIP_TEMPLATE = /^sips?:[A-Za-z0-9_.@:;=+%{}-]*\{identity\}[A-Za-z0-9_.@:;=+%{}-]*$/;

/** The `person_uri` settings field: a SIP URI template (Vonage also takes `app:{identity}`). */
export function personUriField(opts: { app: boolean }): CredentialField {
  return { name: 'person_uri', secret: false, required: false, pattern: opts.app ? TEMPLATE : SIP_TEMPLATE, maxChars: 256 };
}

/** The account's template (validated where stored; an invalid one from the environment is ignored) or `fallback`, with `identity` in it. */
export function personAddress(account: CarrierAccount, identity: string, fallback: string, opts: { app: boolean } = { app: false }): string {
  const own = account.extra.person_uri ?? '';
  const template = (opts.app ? TEMPLATE : SIP_TEMPLATE).test(own) ? own : fallback;
  return template ? template.replaceAll('{identity}', identity) : '';
}
