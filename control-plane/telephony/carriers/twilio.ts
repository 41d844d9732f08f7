/**
 * Twilio (docs/protocols.md sections 1-3): REST `Calls.json` with form bodies and basic auth,
 * TwiML documents, `X-Twilio-Signature` (HMAC-SHA1 over URL + sorted form). `twilioCompatible`
 * builds the adapter for any carrier speaking the same API under another base URL and signing
 * key (SignalWire's LaML, carriers/signalwire.ts).
 */
import type { Config } from '../../../shared/config.js';
import { verifySignature } from '../signature.js';
import * as twiml from '../twiml.js';
import { authorization, carrierRequest, originOf } from './http.js';
import { personAddress } from './person.js';
import { fetchableUrl, recordingRef } from './recording.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent, type CarrierCapabilities, type CarrierName, type CredentialField, type DialRequest, type WebhookRequest } from './types.js';

export const TWIML_DOCUMENTS: CarrierAdapter['documents'] = {
  contentType: 'text/xml',
  connect: (streamUrl, params) => twiml.connectStream(streamUrl, { ...params }),
  sayAndHangup: (text) => twiml.sayAndHangup(text),
  hold: (o) => twiml.hold(o),
  hangup: () => twiml.hangup(),
  empty: () => twiml.response(),
};

const ALL: CarrierCapabilities = {
  inbound: true,
  outbound: true,
  answeringMachineDetection: true,
  coldTransfer: true,
  recording: true,
  dtmf: true,
  bargeInClear: true,
  playbackMarks: true,
  signatureVerification: true,
};

export interface TwilioCompatibleOptions {
  id: CarrierName;
  displayName: string;
  credentialFields: readonly CredentialField[];
  detect(accountSid: string, authToken: string): boolean;
  envAccount(config: Config): CarrierAccount | undefined;
  /** `https://api.twilio.com/2010-04-01` or `https://<space>.signalwire.com/api/laml/2010-04-01`. */
  apiRoot(account: CarrierAccount, config: Config): string;
  /** Header names carrying the signature, in preference order. */
  signatureHeaders: readonly string[];
  /** The HMAC key of this account's webhooks ('' when none is known). */
  signingKey(account: CarrierAccount | undefined, config: Config): string;
  /** Whether verification is on in this deployment. */
  verifyEnabled(config: Config): boolean;
  /**
   * Who a portal hand-off dials (person.ts): `client`, the person's Voice SDK identity
   * (`<Dial><Client>`, Twilio); `sip`, a SIP endpoint from the account's `person_uri` template or
   * `sipDefault` (`<Dial><Sip>`, SignalWire's LaML, which has no `<Client>`).
   */
  person: { kind: 'client' } | { kind: 'sip'; sipDefault(account: CarrierAccount): string };
}

/** A status read is a check in the background, not a placement: it gives up sooner than a create. */
const CALL_STATUS_TIMEOUT_MS = 5000;

/** Twilio's REST API, TwiML and signatures, parameterized by base URL and signing key. */
export function twilioCompatible(o: TwilioCompatibleOptions, config: () => Config): CarrierAdapter {
  async function update(account: CarrierAccount, callSid: string, params: URLSearchParams): Promise<void> {
    await post(account, `/Calls/${encodeURIComponent(callSid)}.json`, params);
  }
  async function post(account: CarrierAccount, path: string, params: URLSearchParams): Promise<Record<string, unknown>> {
    return carrierRequest({
      url: `${o.apiRoot(account, config())}/Accounts/${encodeURIComponent(account.accountSid)}${path}`,
      auth: { basic: [account.accountSid, account.authToken] },
      body: params,
    });
  }
  return {
    id: o.id,
    displayName: o.displayName,
    media: { encoding: 'mulaw', sampleRateHz: 8000 },
    capabilities: ALL,
    credentialFields: o.credentialFields,
    detect: o.detect,
    envAccount: o.envAccount,
    documents: TWIML_DOCUMENTS,

    async dial(account, req: DialRequest) {
      const params = new URLSearchParams({
        To: req.to,
        From: req.from,
        Twiml: twiml.connectStream(req.streamUrl, { ...req.streamParams }),
        StatusCallback: `${req.callbackBase}/status`,
        StatusCallbackMethod: 'POST',
        Timeout: String(req.ringTimeoutS),
      });
      for (const ev of ['initiated', 'ringing', 'answered', 'completed']) params.append('StatusCallbackEvent', ev);
      if (req.amd) {
        // leave_voicemail waits for the beep so the message lands on the recording; others decide early.
        params.set('MachineDetection', req.amd.waitForBeep ? 'DetectMessageEnd' : 'Enable');
        params.set('AsyncAmd', 'true');
        params.set('AsyncAmdStatusCallback', `${req.callbackBase}/amd`);
        params.set('AsyncAmdStatusCallbackMethod', 'POST');
        params.set('MachineDetectionTimeout', String(req.amd.timeoutS));
      }
      if (req.record) {
        params.set('Record', 'true');
        params.set('RecordingStatusCallback', `${req.callbackBase}/recording`);
        params.set('RecordingStatusCallbackMethod', 'POST');
        params.set('RecordingStatusCallbackEvent', 'completed');
      }
      const body = await post(account, '/Calls.json', params);
      if (typeof body.sid !== 'string') throw new CarrierError(200, 'carrier answered without a call sid');
      return { sid: body.sid, status: String(body.status ?? '') };
    },

    hangup: (account, callSid) => update(account, callSid, new URLSearchParams({ Status: 'completed' })),

    async callStatus(account, callSid) {
      let body: Record<string, unknown>;
      try {
        body = await carrierRequest({
          method: 'GET',
          url: `${o.apiRoot(account, config())}/Accounts/${encodeURIComponent(account.accountSid)}/Calls/${encodeURIComponent(callSid)}.json`,
          auth: { basic: [account.accountSid, account.authToken] },
          timeoutMs: CALL_STATUS_TIMEOUT_MS,
        });
      } catch (err) {
        if (err instanceof CarrierError && err.status === 404) return undefined;
        throw err;
      }
      if (typeof body.status !== 'string' || !body.status) return undefined;
      const d = Number(body.duration);
      return { status: body.status, ...(body.duration !== null && body.duration !== undefined && body.duration !== '' && Number.isFinite(d) ? { durationS: d } : {}) };
    },

    transfer: (account, callSid, req) =>
      update(account, callSid, new URLSearchParams({ Twiml: twiml.dialTransfer({ toNumber: req.toNumber, callerId: req.callerId, actionUrl: req.actionUrl }) })),

    handoff: {
      address: (account, identity) => {
        const p = o.person;
        return p.kind === 'client' ? `client:${identity}` : personAddress(account, identity, p.sipDefault(account));
      },
      // The new document stops the stream (the AI drops off) and bridges the person; the <Dial>
      // action reports the end of that leg, as for a cold transfer.
      dial: (account, callSid, req) => {
        const doc = req.address.startsWith('client:')
          ? twiml.dialClient({ identity: req.address.slice('client:'.length), callerId: req.callerId, actionUrl: req.actionUrl })
          : twiml.dialSip({ uri: req.address, callerId: req.callerId, actionUrl: req.actionUrl });
        return update(account, callSid, new URLSearchParams({ Twiml: doc }));
      },
      // `record-from-answer-dual` on the <Dial>: the <Dial action> names the recording (RecordingUrl).
      recordingInCallback: false,
    },

    // Credentials only to the account's API host (Twilio's, or the SignalWire space): a URL
    // elsewhere is not this account's recording. SignalWire serves recordings without auth too
    // (long random URLs); the basic auth it gets is for its own host either way.
    recordingRequest(account, url) {
      const u = fetchableUrl(url);
      let api: string;
      try {
        api = o.apiRoot(account, config());
      } catch {
        return undefined;
      }
      if (!u || u.origin !== originOf(api)) return undefined;
      // The Recording resource answers metadata on Twilio without an extension (WAV on SignalWire);
      // `.wav` is the audio on both (one channel per leg for a dual-channel recording).
      if (!/\.(wav|mp3)$/i.test(u.pathname)) u.pathname += '.wav';
      return { url: u.toString(), headers: { authorization: authorization({ basic: [account.accountSid, account.authToken] }) } };
    },

    async startRecording(account, callSid, callbackUrl) {
      await post(account, `/Calls/${encodeURIComponent(callSid)}/Recordings.json`, new URLSearchParams({ RecordingStatusCallback: callbackUrl, RecordingStatusCallbackMethod: 'POST' }));
    },

    verifyWebhook(req: WebhookRequest, account, cfg) {
      const key = o.signingKey(account, cfg);
      if (!o.verifyEnabled(cfg) || !key) return true;
      const sig = o.signatureHeaders.map((h) => req.headers.get(h)).find((v) => v);
      return verifySignature(key, req.url, req.params, sig);
    },

    parseInbound(req) {
      const p = req.params;
      return { callSid: p.CallSid ?? '', from: p.From ?? '', to: p.To ?? '', accountSid: p.AccountSid ?? '', callerName: p.CallerName };
    },

    parseEvents(req): CarrierCallEvent[] {
      const p = req.params;
      const sid = p.CallSid ?? '';
      if (p.AnsweredBy) return [{ kind: 'amd', callSid: sid, answeredBy: p.AnsweredBy }];
      // A `<Dial action>` carries the leg's recording too: it is the end of the leg first.
      if (p.DialCallStatus) return [{ kind: 'dial_complete', status: p.DialCallStatus, recording: recordingRef(p.RecordingUrl, p.RecordingSid) }];
      if (p.RecordingUrl) return [{ kind: 'recording', callSid: sid, url: p.RecordingUrl, sid: p.RecordingSid ?? '' }];
      if (p.CallStatus) {
        const d = Number(p.CallDuration);
        const s = Number(p.SequenceNumber);
        return [{ kind: 'status', callSid: sid, status: p.CallStatus, durationS: p.CallDuration && Number.isFinite(d) ? d : undefined, sequence: p.SequenceNumber && Number.isFinite(s) ? s : undefined }];
      }
      return [{ kind: 'ignored', type: 'unknown' }];
    },
  };
}

export const TWILIO_SID = /^AC[0-9a-f]{32}$/i;

export function createTwilioAdapter(config: () => Config): CarrierAdapter {
  return twilioCompatible(
    {
      id: 'twilio',
      displayName: 'Twilio',
      credentialFields: [
        { name: 'account_sid', secret: false, required: true, pattern: TWILIO_SID },
        { name: 'auth_token', secret: true, required: true },
      ],
      detect: (sid) => TWILIO_SID.test(sid),
      envAccount: (c) => (c.twilioAccountSid && c.twilioAuthToken ? { carrier: 'twilio', accountSid: c.twilioAccountSid, authToken: c.twilioAuthToken, extra: {} } : undefined),
      apiRoot: (_a, c) => `${c.twilioApiBaseUrl.replace(/\/+$/, '')}/2010-04-01`,
      signatureHeaders: ['x-twilio-signature'],
      signingKey: (a, c) => a?.authToken || c.twilioAuthToken || '',
      verifyEnabled: (c) => c.twilioVerifySignature,
      person: { kind: 'client' },
    },
    config,
  );
}
