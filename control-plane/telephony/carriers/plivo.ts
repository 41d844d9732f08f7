/**
 * Plivo (docs/telephony.md "Plivo"): the Call API (`/v1/Account/{auth_id}/Call/`, basic auth, JSON),
 * Plivo XML documents with a bidirectional `<Stream>`, webhooks signed with `X-Plivo-Signature-V3`
 * (plivo-signature.ts).
 *
 * Plivo has no inline XML at dial: `answer_url` is our events route with `?doc=connect&stream=...`
 * and `answerEvent` answers it with the connect XML (the URL is covered by the signature, so the
 * stream cannot be swapped). Transfer is the same trick (`?doc=transfer`). The call's CallUUID only
 * exists once it is answered: dial returns the `request_uuid`, and the answer callback's CallUUID
 * replaces it on the record (events carry it); a hang-up before that cancels the request.
 *
 * Portal hand-off (`?doc=person`): `<Dial><User>` to the person's SIP endpoint (`person_uri`,
 * default `sip:{identity}@phone.plivo.com`).
 *
 * Credentials: `account_sid` = Auth ID (`MA`/`SA` + 18), `auth_token`, `person_uri`. Environment
 * fallback: PLIVO_AUTH_ID, PLIVO_AUTH_TOKEN, PLIVO_PERSON_URI; PLIVO_API_BASE_URL (default
 * https://api.plivo.com), PLIVO_VERIFY_SIGNATURE (default true).
 */
import type { Config } from '../../../shared/config.js';
import * as xml from './plivo-xml.js';
import { verifyPlivoSignature } from './plivo-signature.js';
import { authorization, carrierRequest, originOf, trimBase } from './http.js';
import { withSessionQuery } from './stream-url.js';
import { personAddress, personUriField } from './person.js';
import { fetchableUrl, isPersonLeg, personLegUrl, recordingRef } from './recording.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent, type WebhookRequest } from './types.js';

export const PLIVO_AUTH_ID = /^(MA|SA)[A-Z0-9]{18}$/;

/** Plivo's hang-up statuses in Twilio's vocabulary (mapCarrierStatus). */
const STATUS: Record<string, string> = {
  'in-progress': 'in-progress',
  ringing: 'ringing',
  completed: 'completed',
  busy: 'busy',
  failed: 'failed',
  timeout: 'no-answer',
  'no-answer': 'no-answer',
  cancel: 'canceled',
  canceled: 'canceled',
};

/** Where Plivo serves recordings (`RecordUrl`). */
const PLIVO_MEDIA_ORIGIN = 'https://media.plivo.com';

function query(url: string): URLSearchParams {
  try {
    return new URL(url).searchParams;
  } catch {
    return new URLSearchParams();
  }
}

export function createPlivoAdapter(config: () => Config): CarrierAdapter {
  const base = () => trimBase(config().carrierEnv.PLIVO_API_BASE_URL ?? 'https://api.plivo.com');
  const call = (a: CarrierAccount, method: 'POST' | 'DELETE', path: string, body?: Record<string, unknown>) =>
    carrierRequest({ method, url: `${base()}/v1/Account/${encodeURIComponent(a.accountSid)}${path}`, auth: { basic: [a.accountSid, a.authToken] }, body });
  const digits = (n: string) => n.replace(/^\+/, '');
  /** Transfer and hand-off alike: the A leg fetches our `?doc=` document (answerEvent), which dials `to` and stops the stream. */
  const redirectALeg = (a: CarrierAccount, sid: string, callbackBase: string, doc: 'transfer' | 'person', to: string, callerId: string) => {
    const u = new URL(`${callbackBase}/events/plivo`);
    u.searchParams.set('doc', doc);
    u.searchParams.set('to', to);
    u.searchParams.set('caller_id', callerId);
    return call(a, 'POST', `/Call/${encodeURIComponent(sid)}/`, { legs: 'aleg', aleg_url: u.toString(), aleg_method: 'POST' });
  };
  const documents: CarrierAdapter['documents'] = {
    contentType: 'text/xml',
    connect: (streamUrl, params) => xml.connectStream(withSessionQuery(streamUrl, params), params),
    sayAndHangup: (text) => xml.sayAndHangup(text),
    hold: (o) => xml.hold(o),
    hangup: () => xml.hangup(),
    empty: () => xml.response(),
  };

  return {
    id: 'plivo',
    displayName: 'Plivo',
    media: { encoding: 'mulaw', sampleRateHz: 8000 },
    capabilities: { inbound: true, outbound: true, answeringMachineDetection: true, coldTransfer: true, recording: true, dtmf: true, bargeInClear: true, playbackMarks: true, signatureVerification: true },
    credentialFields: [
      { name: 'account_sid', secret: false, required: true, pattern: PLIVO_AUTH_ID },
      { name: 'auth_token', secret: true, required: true },
      personUriField({ app: false }),
    ],
    detect: (sid) => PLIVO_AUTH_ID.test(sid),
    envAccount: (c) => {
      const e = c.carrierEnv;
      return e.PLIVO_AUTH_ID && e.PLIVO_AUTH_TOKEN ? { carrier: 'plivo', accountSid: e.PLIVO_AUTH_ID, authToken: e.PLIVO_AUTH_TOKEN, extra: { person_uri: e.PLIVO_PERSON_URI ?? '' } } : undefined;
    },
    documents,

    async dial(account, req) {
      const events = `${req.callbackBase}/events/plivo`;
      const answer = new URL(events);
      answer.searchParams.set('doc', 'connect');
      answer.searchParams.set('stream', req.streamUrl);
      for (const [k, v] of Object.entries(req.streamParams)) answer.searchParams.set(k, v);
      if (req.record) answer.searchParams.set('record', '1');
      const body: Record<string, unknown> = {
        from: digits(req.from),
        to: digits(req.to),
        answer_url: answer.toString(),
        answer_method: 'POST',
        hangup_url: events,
        hangup_method: 'POST',
        ring_url: events,
        ring_method: 'POST',
        ring_timeout: req.ringTimeoutS,
      };
      if (req.amd) {
        body.machine_detection = 'true';
        // Plivo decides within machine_detection_time (ms, 2000-10000).
        body.machine_detection_time = Math.min(10_000, Math.max(2000, req.amd.timeoutS * 1000));
        body.machine_detection_url = events;
        body.machine_detection_method = 'POST';
      }
      const r = await call(account, 'POST', '/Call/', body);
      const id = Array.isArray(r.request_uuid) ? r.request_uuid[0] : r.request_uuid;
      if (typeof id !== 'string' || !id) throw new CarrierError(200, 'carrier answered without a request_uuid');
      return { sid: id, status: 'queued' };
    },

    async hangup(account, sid) {
      try {
        await call(account, 'DELETE', `/Call/${encodeURIComponent(sid)}/`);
      } catch (err) {
        // Not answered yet: the id is still the request's.
        if (!(err instanceof CarrierError) || err.status !== 404) throw err;
        await call(account, 'DELETE', `/Request/${encodeURIComponent(sid)}/`);
      }
    },

    async transfer(account, sid, req) {
      await redirectALeg(account, sid, req.callbackBase, 'transfer', req.toNumber, req.callerId);
    },

    // Like a transfer: the A leg fetches `?doc=person` (signed URL, answered by answerEvent) and
    // runs `<Record startOnDialAnswer>` + `<Dial><User>`, which stops the stream; the Dial action
    // reports the end of the leg, the `<Record>` callback (marked `?leg=person`) its recording.
    handoff: {
      address: (account, identity) => personAddress(account, identity, 'sip:{identity}@phone.plivo.com'),
      async dial(account, sid, req) {
        await redirectALeg(account, sid, req.callbackBase, 'person', req.address, req.callerId);
      },
      recordingInCallback: true,
    },

    // Plivo's recording URLs (`RecordUrl`) are on its media host (`media.plivo.com/v1/Account/
    // {auth_id}/Recording/...`, which asks for the account's basic auth when recording URL
    // authentication is on) or, for older accounts, a public storage link. The Auth ID and token
    // go only to Plivo's media host or the configured API base, and only for this account's path;
    // any other link is fetched without credentials.
    recordingRequest(account, url) {
      const u = fetchableUrl(url);
      if (!u) return undefined;
      const plivoHost = u.origin === PLIVO_MEDIA_ORIGIN || u.origin === originOf(base());
      const own = u.pathname.startsWith(`/v1/Account/${encodeURIComponent(account.accountSid)}/`);
      const headers: Record<string, string> = plivoHost && own ? { authorization: authorization({ basic: [account.accountSid, account.authToken] }) } : {};
      return { url: u.toString(), headers };
    },

    async startRecording(account, sid, callbackUrl) {
      await call(account, 'POST', `/Call/${encodeURIComponent(sid)}/Record/`, { callback_url: callbackUrl, callback_method: 'POST' });
    },

    verifyWebhook(req: WebhookRequest, account, cfg) {
      const token = account?.authToken || cfg.carrierEnv.PLIVO_AUTH_TOKEN || '';
      if (cfg.carrierEnv.PLIVO_VERIFY_SIGNATURE === 'false' || !token) return true;
      return verifyPlivoSignature(token, 'POST', req.url, req.params, req.headers.get('x-plivo-signature-v3-nonce'), req.headers.get('x-plivo-signature-v3'));
    },

    parseInbound(req) {
      const p = req.params;
      return { callSid: p.CallUUID ?? '', from: p.From ? `+${digits(p.From)}` : '', to: p.To ? `+${digits(p.To)}` : '', accountSid: '' };
    },

    parseEvents(req): CarrierCallEvent[] {
      const p = req.params;
      const sid = p.CallUUID ?? '';
      const q = query(req.url);
      if (q.get('doc') === 'transfer' || q.get('doc') === 'person') return [{ kind: 'ignored', type: 'transfer_answer' }];
      if (p.DialStatus || p.DialAction) return p.DialAction === 'answer' ? [{ kind: 'ignored', type: 'dial_answer' }] : [{ kind: 'dial_complete', status: p.DialStatus || 'completed' }];
      if (p.Machine !== undefined) return [{ kind: 'amd', callSid: sid, answeredBy: p.Machine === 'true' ? 'machine_start' : 'human' }];
      if (p.RecordUrl && isPersonLeg(req.url)) {
        const ref = recordingRef(p.RecordUrl, p.RecordingID);
        return ref ? [{ kind: 'leg_recording', recording: ref }] : [{ kind: 'ignored', type: 'recording' }];
      }
      if (p.RecordUrl) return [{ kind: 'recording', callSid: sid, url: p.RecordUrl, sid: p.RecordingID ?? '' }];
      const status = STATUS[p.CallStatus ?? ''];
      if (status) {
        const d = Number(p.Duration ?? p.BillDuration);
        return [{ kind: 'status', callSid: sid, status, durationS: Number.isFinite(d) && (p.Duration ?? p.BillDuration) ? d : undefined }];
      }
      return [{ kind: 'ignored', type: p.Event ?? 'unknown' }];
    },

    answerEvent(req) {
      const q = query(req.url);
      if (q.get('doc') === 'connect') {
        const stream = q.get('stream') ?? '';
        const params = { session_id: q.get('session_id') ?? '', agent_id: q.get('agent_id') ?? '', call_id: q.get('call_id') ?? '' };
        if (!/^wss?:\/\//.test(stream)) return xml.hangup();
        const doc = xml.connectStream(withSessionQuery(stream, params), params);
        if (q.get('record') !== '1') return doc;
        // Record the whole session in the background, announced to the events route.
        const events = req.url.split('?')[0]!;
        return doc.replace('<Response>', `<Response>${xml.recordSession(events)}`);
      }
      if (q.get('doc') === 'transfer') return xml.dialTransfer({ toNumber: q.get('to') ?? '', callerId: q.get('caller_id') ?? '', actionUrl: req.url.split('?')[0]! });
      if (q.get('doc') === 'person') {
        const to = q.get('to') ?? '';
        const events = req.url.split('?')[0]!;
        return /^sips?:/.test(to) ? xml.dialUser({ uri: to, callerId: q.get('caller_id') ?? '', actionUrl: events, recordingCallbackUrl: personLegUrl(events) }) : xml.hangup();
      }
      return undefined;
    },
  };
}
