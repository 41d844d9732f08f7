/**
 * Vonage Voice API (docs/telephony.md "Vonage"): `POST /v1/calls` and `PUT /v1/calls/{uuid}` with
 * an application JWT (RS256, vonage-jwt.ts), NCCO documents (vonage-ncco.ts) with a `websocket`
 * endpoint (linear PCM, 8 kHz unless the account asks for 16), signed callbacks (`Authorization:
 * Bearer` HS256 JWT with the account's signature secret and the body's hash).
 *
 * Credentials: `account_sid` = API key (8 hex characters: outbound auto-detection), `auth_token` =
 * signature secret (verifies callbacks), `application_id`, `private_key` (PEM, PKCS#8). Settings:
 * `sample_rate_hz` (`8000`, the default, or `16000`: the stream's rate, docs/telephony.md "Vonage"),
 * `person_uri` (the portal hand-off's person: default `app:{identity}`, a Client SDK user; or a SIP URI).
 * Environment fallback: VONAGE_API_KEY, VONAGE_SIGNATURE_SECRET, VONAGE_APPLICATION_ID,
 * VONAGE_PRIVATE_KEY (`\n` escapes allowed), VONAGE_SAMPLE_RATE_HZ; VONAGE_API_BASE_URL (default
 * https://api.nexmo.com), VONAGE_VERIFY_SIGNATURE (default true).
 */
import type { Config } from '../../../shared/config.js';
import { authorization, carrierRequest, originOf, trimBase } from './http.js';
import * as ncco from './vonage-ncco.js';
import type { VonageRate } from './vonage-ncco.js';
import { appJwt, verifyVonageCallback, type VonageApp } from './vonage-jwt.js';
import { withSessionQuery } from './stream-url.js';
import { personAddress, personUriField } from './person.js';
import { fetchableUrl, personLegUrl, recordingRef } from './recording.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent } from './types.js';

export const VONAGE_API_KEY = /^[0-9a-f]{8}$/i;
/** Vonage's API hosts, global and regional (`api.nexmo.com`, `api-us.nexmo.com`, `api-eu-3.vonage.com`, ...). */
const VONAGE_API_HOST = /^api(-[a-z0-9-]+)?\.(nexmo|vonage)\.com$/i;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;
const PEM = /^-----BEGIN PRIVATE KEY-----[A-Za-z0-9+/=\s\\n]{64,8192}-----END PRIVATE KEY-----\s*$/;

/** Vonage call statuses in Twilio's vocabulary (mapCarrierStatus). */
const STATUS: Record<string, string> = {
  started: 'initiated',
  ringing: 'ringing',
  answered: 'in-progress',
  completed: 'completed',
  busy: 'busy',
  timeout: 'no-answer',
  unanswered: 'no-answer',
  rejected: 'failed',
  failed: 'failed',
  cancelled: 'canceled',
};

/**
 * The stream's rate for this account: 8 kHz unless its `sample_rate_hz` says 16000 (narrowband is
 * what a phone call carries; wideband doubles the samples through VAD and ASR for nothing on PSTN
 * legs). The setting is validated where it is stored; anything else here falls back to 8000.
 */
export function streamRate(a: CarrierAccount | undefined): VonageRate {
  return a?.extra.sample_rate_hz === '16000' ? 16000 : 8000;
}

function app(a: CarrierAccount): VonageApp {
  const applicationId = a.extra.application_id ?? '';
  const privateKey = (a.extra.private_key ?? '').replace(/\\n/g, '\n');
  if (!applicationId || !privateKey) throw new CarrierError(400, 'the Vonage account has no application_id / private_key');
  return { applicationId, privateKey };
}

export function createVonageAdapter(config: () => Config): CarrierAdapter {
  const base = () => trimBase(config().carrierEnv.VONAGE_API_BASE_URL ?? 'https://api.nexmo.com');
  const send = async (a: CarrierAccount, method: 'POST' | 'PUT', path: string, body: Record<string, unknown>) =>
    carrierRequest({ method, url: `${base()}${path}`, auth: { bearer: await appJwt(app(a)) }, body });
  const digits = (n: string) => n.replace(/^\+/, '');
  const json = (v: unknown) => JSON.stringify(v);

  return {
    id: 'vonage',
    displayName: 'Vonage',
    // The default rate; a workspace may choose 16 kHz (`sample_rate_hz`).
    media: { encoding: 'pcm_s16le', sampleRateHz: 8000 },
    capabilities: { inbound: true, outbound: true, answeringMachineDetection: true, coldTransfer: true, recording: true, dtmf: true, bargeInClear: true, playbackMarks: true, signatureVerification: true },
    credentialFields: [
      { name: 'account_sid', secret: false, required: true, pattern: VONAGE_API_KEY },
      { name: 'auth_token', secret: true, required: true },
      { name: 'application_id', secret: false, required: true, pattern: UUID },
      // PEM with its line breaks written as a backslash and n (control characters are refused in settings).
      { name: 'private_key', secret: true, required: true, pattern: PEM, maxChars: 8192 },
      // The websocket's sample rate: 8000 (default, narrowband) or 16000 (wideband).
      { name: 'sample_rate_hz', secret: false, required: false, pattern: /^(8000|16000)$/ },
      personUriField({ app: true }),
    ],
    detect: (sid) => VONAGE_API_KEY.test(sid),
    envAccount: (c) => {
      const e = c.carrierEnv;
      if (!e.VONAGE_API_KEY || !e.VONAGE_SIGNATURE_SECRET) return undefined;
      return { carrier: 'vonage', accountSid: e.VONAGE_API_KEY, authToken: e.VONAGE_SIGNATURE_SECRET, extra: { application_id: e.VONAGE_APPLICATION_ID ?? '', private_key: e.VONAGE_PRIVATE_KEY ?? '', sample_rate_hz: e.VONAGE_SAMPLE_RATE_HZ ?? '', person_uri: e.VONAGE_PERSON_URI ?? '' } };
    },
    documents: {
      contentType: 'application/json',
      // Inbound: no events of the connect action (inbound calls get no carrier callbacks, as Twilio's).
      connect: (streamUrl, params, account) => json(ncco.connectWebsocket({ streamUrl: withSessionQuery(streamUrl, params), params, rateHz: streamRate(account) })),
      sayAndHangup: (text) => json(ncco.sayAndHangup(text)),
      hold: (o) => json(ncco.hold(o)),
      hangup: () => json(ncco.hangup()),
      empty: () => '{}',
    },

    async dial(account, req) {
      const events = `${req.callbackBase}/events/vonage`;
      const body: Record<string, unknown> = {
        to: [{ type: 'phone', number: digits(req.to) }],
        from: { type: 'phone', number: digits(req.from) },
        ncco: ncco.connectWebsocket({ streamUrl: withSessionQuery(req.streamUrl, req.streamParams), params: req.streamParams, rateHz: streamRate(account), eventUrl: events, record: req.record ? { eventUrl: events } : undefined }),
        event_url: [events],
        event_method: 'POST',
        ringing_timer: req.ringTimeoutS,
      };
      // `continue`: the call goes on whatever the verdict; the verdict is an event (status human | machine).
      if (req.amd) body.advanced_machine_detection = { behavior: 'continue', mode: req.amd.waitForBeep ? 'detect_beep' : 'detect', beep_timeout: Math.min(120, Math.max(45, req.amd.timeoutS)) };
      const r = await send(account, 'POST', '/v1/calls', body);
      if (typeof r.uuid !== 'string' || !r.uuid) throw new CarrierError(200, 'carrier answered without a call uuid');
      return { sid: r.uuid, status: String(r.status ?? '') };
    },

    async hangup(account, uuid) {
      await send(account, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, { action: 'hangup' });
    },

    async transfer(account, uuid, req) {
      // The new leg's events come to the events route marked as the transfer's.
      const destination = { type: 'ncco', ncco: ncco.dialTransfer({ toNumber: req.toNumber, callerId: req.callerId, actionUrl: `${req.callbackBase}/events/vonage?leg=transfer` }) };
      await send(account, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, { action: 'transfer', destination });
    },

    // A transfer to an NCCO connecting the person: the websocket leg ends (the AI drops off); the
    // person's leg reports to the events route marked as the transfer's, its end is dial_complete.
    handoff: {
      address: (account, identity) => personAddress(account, identity, 'app:{identity}', { app: true }),
      async dial(account, uuid, req) {
        const events = `${req.callbackBase}/events/vonage`;
        const destination = { type: 'ncco', ncco: ncco.connectPerson({ address: req.address, callerId: req.callerId, actionUrl: `${events}?leg=transfer`, recordingEventUrl: personLegUrl(events) }) };
        await send(account, 'PUT', `/v1/calls/${encodeURIComponent(uuid)}`, { action: 'transfer', destination });
      },
      recordingInCallback: true,
    },

    // Vonage recordings (`recording_url`, `https://api.nexmo.com/v1/files/<uuid>` or a regional
    // `api-<region>` host of nexmo.com / vonage.com) are downloaded with the application JWT that
    // made them. It goes only to those hosts (or the configured API base) and the `/v1/files/`
    // path; a link elsewhere cannot be a Vonage recording and is not fetched.
    async recordingRequest(account, url) {
      const u = fetchableUrl(url);
      const vonageHost = u && ((u.protocol === 'https:' && VONAGE_API_HOST.test(u.hostname)) || u.origin === originOf(base()));
      if (!u || !vonageHost || !u.pathname.startsWith('/v1/files/')) return undefined;
      return { url: u.toString(), headers: { authorization: authorization({ bearer: await appJwt(app(account)) }) } };
    },

    verifyWebhook(req, account, cfg) {
      const secret = account?.authToken || cfg.carrierEnv.VONAGE_SIGNATURE_SECRET || '';
      if (cfg.carrierEnv.VONAGE_VERIFY_SIGNATURE === 'false' || !secret) return true;
      return verifyVonageCallback({ secret, authorization: req.headers.get('authorization'), rawBody: req.rawBody, applicationId: account?.extra.application_id || undefined }).ok;
    },

    parseInbound(req) {
      const p = req.params;
      const plus = (n: string | undefined) => (n ? `+${digits(n)}` : '');
      return { callSid: p.uuid ?? '', from: plus(p.from), to: plus(p.to), accountSid: '' };
    },

    parseEvents(req): CarrierCallEvent[] {
      const p = req.params;
      const uuid = p.uuid ?? '';
      const leg = new URL(req.url).searchParams.get('leg');
      if (leg === 'person') {
        const ref = recordingRef(p.recording_url, p.recording_uuid);
        return ref ? [{ kind: 'leg_recording', recording: ref }] : [{ kind: 'ignored', type: 'person_leg' }];
      }
      if (leg === 'transfer') {
        const s = STATUS[p.status ?? ''];
        return s && ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(s) ? [{ kind: 'dial_complete', status: s }] : [{ kind: 'ignored', type: `transfer_${p.status ?? ''}` }];
      }
      if (p.recording_url) return [{ kind: 'recording', callSid: uuid, url: p.recording_url, sid: p.recording_uuid ?? '' }];
      if (p.status === 'human') return [{ kind: 'amd', callSid: uuid, answeredBy: 'human' }];
      if (p.status === 'machine') {
        const sub = (req.json as { sub_state?: unknown } | undefined)?.sub_state;
        return [{ kind: 'amd', callSid: uuid, answeredBy: sub === 'beep_start' ? 'machine_end_beep' : 'machine_start' }];
      }
      const s = STATUS[p.status ?? ''];
      if (s) {
        const d = Number(p.duration);
        return [{ kind: 'status', callSid: uuid, status: s, durationS: p.duration && Number.isFinite(d) ? d : undefined }];
      }
      return [{ kind: 'ignored', type: p.status ?? 'unknown' }];
    },
  };
}

