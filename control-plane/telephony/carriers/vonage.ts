/**
 * Vonage Voice API (docs/telephony.md "Vonage"): `POST /v1/calls` and `PUT /v1/calls/{uuid}` with
 * an application JWT (RS256, vonage-jwt.ts), NCCO documents (vonage-ncco.ts) with a `websocket`
 * endpoint (16 kHz linear PCM), signed callbacks (`Authorization: Bearer` HS256 JWT with the
 * account's signature secret and the body's hash).
 *
 * Credentials: `account_sid` = API key (8 hex characters: outbound auto-detection), `auth_token` =
 * signature secret (verifies callbacks), `application_id`, `private_key` (PEM, PKCS#8).
 * Environment fallback: VONAGE_API_KEY, VONAGE_SIGNATURE_SECRET, VONAGE_APPLICATION_ID,
 * VONAGE_PRIVATE_KEY (`\n` escapes allowed); VONAGE_API_BASE_URL (default https://api.nexmo.com),
 * VONAGE_VERIFY_SIGNATURE (default true).
 */
import type { Config } from '../../../shared/config.js';
import { carrierRequest, trimBase } from './http.js';
import * as ncco from './vonage-ncco.js';
import { appJwt, verifyVonageCallback, type VonageApp } from './vonage-jwt.js';
import { withSessionQuery } from './stream-url.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent } from './types.js';

export const VONAGE_API_KEY = /^[0-9a-f]{8}$/i;
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
    media: { encoding: 'pcm_s16le', sampleRateHz: 16000 },
    capabilities: { inbound: true, outbound: true, answeringMachineDetection: true, coldTransfer: true, recording: true, dtmf: true, bargeInClear: true, playbackMarks: true, signatureVerification: true },
    credentialFields: [
      { name: 'account_sid', secret: false, required: true, pattern: VONAGE_API_KEY },
      { name: 'auth_token', secret: true, required: true },
      { name: 'application_id', secret: false, required: true, pattern: UUID },
      // PEM with its line breaks written as a backslash and n (control characters are refused in settings).
      { name: 'private_key', secret: true, required: true, pattern: PEM, maxChars: 8192 },
    ],
    detect: (sid) => VONAGE_API_KEY.test(sid),
    envAccount: (c) => {
      const e = c.carrierEnv;
      if (!e.VONAGE_API_KEY || !e.VONAGE_SIGNATURE_SECRET) return undefined;
      return { carrier: 'vonage', accountSid: e.VONAGE_API_KEY, authToken: e.VONAGE_SIGNATURE_SECRET, extra: { application_id: e.VONAGE_APPLICATION_ID ?? '', private_key: e.VONAGE_PRIVATE_KEY ?? '' } };
    },
    documents: {
      contentType: 'application/json',
      // Inbound: no events of the connect action (inbound calls get no carrier callbacks, as Twilio's).
      connect: (streamUrl, params) => json(ncco.connectWebsocket({ streamUrl: withSessionQuery(streamUrl, params), params })),
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
        ncco: ncco.connectWebsocket({ streamUrl: withSessionQuery(req.streamUrl, req.streamParams), params: req.streamParams, eventUrl: events, record: req.record ? { eventUrl: events } : undefined }),
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

