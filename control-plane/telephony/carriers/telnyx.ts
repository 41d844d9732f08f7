/**
 * Telnyx Call Control (API v2): event-driven. We dial with `POST /v2/calls` (Bearer API key, JSON;
 * the stream, AMD and recording are dial options), act on live calls with
 * `POST /v2/calls/{call_control_id}/actions/{answer|hangup|transfer|record_start|reject}`, and
 * Telnyx posts JSON events (`call.initiated`, `call.answered`, `call.hangup`,
 * `call.machine.detection.ended`, `call.machine.greeting.ended`, `call.recording.saved`, ...)
 * signed with Ed25519 (telnyx-signature.ts). Inbound calls arrive as `call.initiated` on the
 * connection's webhook URL (`/telephony/calls/inbound/telnyx`); we answer by REST with our stream
 * and this call's events URL (`/telephony/calls/{call_id}/events/telnyx`).
 *
 * Credentials: `account_sid` = the Call Control connection (application) id, `auth_token` = the
 * API key (`KEY…`), `public_key` = the webhook public key (base64). Environment fallback:
 * TELNYX_CONNECTION_ID, TELNYX_API_KEY, TELNYX_PUBLIC_KEY; TELNYX_API_BASE_URL (default
 * https://api.telnyx.com) for tests.
 *
 * Not like Twilio: refusals (unbound number, outbound-only agent, no seat) are a `reject` (the
 * caller hears the network's rejection, not a spoken message): speaking first needs an answer, a
 * `speak` and a hang-up on `call.speak.ended`, which is not built; no hold queue either.
 */
import type { Config } from '../../../shared/config.js';
import { carrierRequest, trimBase } from './http.js';
import { verifyTelnyxSignature } from './telnyx-signature.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent, type DialRequest, type WebhookRequest } from './types.js';

const API_KEY = /^KEY[0-9A-Za-z_-]+$/;
const JSON_DOCS: CarrierAdapter['documents'] = {
  contentType: 'application/json',
  // Event carriers have no documents: every webhook is acknowledged with an empty object.
  connect: () => '{}',
  sayAndHangup: () => '{}',
  hold: () => '{}',
  hangup: () => '{}',
  empty: () => '{}',
};

/** `client_state` we attach to calls: base64 JSON, echoed in every event of the call. */
interface ClientState {
  /** Wait for the beep (leave_voicemail): the verdict is the greeting's end, not the detection. */
  b?: 1;
}

function encodeState(s: ClientState): string {
  return Buffer.from(JSON.stringify(s)).toString('base64');
}

function decodeState(v: unknown): ClientState {
  if (typeof v !== 'string' || v.length > 1024) return {};
  try {
    const o: unknown = JSON.parse(Buffer.from(v, 'base64').toString('utf8'));
    return o && typeof o === 'object' ? (o as ClientState) : {};
  } catch {
    return {};
  }
}

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/** The event envelope: `{data: {event_type, payload}}` (also accepted without `data`). */
function eventOf(req: WebhookRequest): { type: string; payload: Record<string, unknown> } {
  const body = rec(req.json);
  const data = body.data !== undefined ? rec(body.data) : body;
  return { type: str(data.event_type), payload: rec(data.payload) };
}

/** Telnyx `hangup_cause` -> the Twilio-vocabulary final status our registry speaks. */
function finalStatus(cause: string): string {
  switch (cause) {
    case 'user_busy':
      return 'busy';
    case 'timeout':
    case 'no_answer':
    case 'originator_cancel':
      return cause === 'originator_cancel' ? 'canceled' : 'no-answer';
    case 'call_rejected':
    case 'unallocated_number':
      return 'failed';
    default:
      return 'completed';
  }
}

export function createTelnyxAdapter(config: () => Config): CarrierAdapter {
  const base = () => {
    const b = config().carrierEnv.TELNYX_API_BASE_URL ?? 'https://api.telnyx.com';
    if (!/^https?:\/\/[^\s/]+/.test(b)) throw new CarrierError(0, 'TELNYX_API_BASE_URL is not an http(s) URL');
    return `${trimBase(b)}/v2`;
  };
  const action = (account: CarrierAccount, callSid: string, name: string, body: Record<string, unknown> = {}) =>
    carrierRequest({ url: `${base()}/calls/${encodeURIComponent(callSid)}/actions/${name}`, auth: { bearer: account.authToken }, body });
  const streamOptions = (streamUrl: string, params: DialRequest['streamParams']) => ({
    // The start frame carries no parameters we can rely on: the session travels in the URL query.
    stream_url: `${streamUrl}?${new URLSearchParams({ session_id: params.session_id, agent_id: params.agent_id })}`,
    stream_track: 'inbound_track',
    stream_bidirectional_mode: 'rtp',
    stream_bidirectional_codec: 'PCMU',
  });

  return {
    id: 'telnyx',
    displayName: 'Telnyx',
    media: { encoding: 'mulaw', sampleRateHz: 8000 },
    capabilities: {
      inbound: true,
      outbound: true,
      answeringMachineDetection: true,
      coldTransfer: true,
      recording: true,
      dtmf: true,
      bargeInClear: true,
      playbackMarks: true,
      signatureVerification: true,
    },
    credentialFields: [
      { name: 'account_sid', secret: false, required: true, pattern: /^[A-Za-z0-9_-]{1,64}$/ },
      { name: 'auth_token', secret: true, required: true, pattern: API_KEY },
      { name: 'public_key', secret: false, required: false, pattern: /^[A-Za-z0-9+/]{43}=$/ },
    ],
    detect: (sid, token) => API_KEY.test(token) || API_KEY.test(sid),
    envAccount: (c) => {
      const e = c.carrierEnv;
      if (!e.TELNYX_API_KEY && !e.TELNYX_CONNECTION_ID && !e.TELNYX_PUBLIC_KEY) return undefined;
      return { carrier: 'telnyx', accountSid: e.TELNYX_CONNECTION_ID ?? '', authToken: e.TELNYX_API_KEY ?? '', extra: { public_key: e.TELNYX_PUBLIC_KEY ?? '' } };
    },
    documents: JSON_DOCS,

    async dial(account, req) {
      const body: Record<string, unknown> = {
        connection_id: account.accountSid,
        to: req.to,
        from: req.from,
        timeout_secs: req.ringTimeoutS,
        webhook_url: `${req.callbackBase}/events/telnyx`,
        webhook_url_method: 'POST',
        client_state: encodeState(req.amd?.waitForBeep ? { b: 1 } : {}),
        ...streamOptions(req.streamUrl, req.streamParams),
      };
      if (req.amd) {
        body.answering_machine_detection = req.amd.waitForBeep ? 'detect_beep' : 'detect';
        body.answering_machine_detection_config = { total_analysis_time_millis: req.amd.timeoutS * 1000 };
      }
      if (req.record) {
        body.record = 'record-from-answer';
        body.record_format = 'mp3';
      }
      const res = await carrierRequest({ url: `${base()}/calls`, auth: { bearer: account.authToken }, body });
      const id = str(rec(res.data).call_control_id);
      if (!id) throw new CarrierError(200, 'carrier answered without a call_control_id');
      return { sid: id, status: 'queued' };
    },

    async hangup(account, callSid) {
      await action(account, callSid, 'hangup');
    },

    async transfer(account, callSid, req) {
      await action(account, callSid, 'transfer', { to: req.toNumber, from: req.callerId, webhook_url: `${req.callbackBase}/events/telnyx`, webhook_url_method: 'POST' });
    },

    async startRecording(account, callSid) {
      await action(account, callSid, 'record_start', { format: 'mp3', channels: 'single' });
    },

    async answerInbound(account, callSid, a) {
      if ('sayAndHangup' in a) {
        await action(account, callSid, 'reject', { cause: 'CALL_REJECTED' });
        return;
      }
      const { streamUrl, params, callbackBase } = a.connect;
      await action(account, callSid, 'answer', { webhook_url: `${callbackBase}/events/telnyx`, webhook_url_method: 'POST', client_state: encodeState({}), ...streamOptions(streamUrl, params) });
    },

    verifyWebhook(req, account, cfg) {
      const key = account?.extra.public_key || cfg.carrierEnv.TELNYX_PUBLIC_KEY || '';
      if (!key || cfg.carrierEnv.TELNYX_VERIFY_SIGNATURE === 'false') return true;
      return verifyTelnyxSignature(key, req.rawBody, req.headers.get('telnyx-signature-ed25519'), req.headers.get('telnyx-timestamp'), Math.floor(Date.now() / 1000));
    },

    parseInbound(req) {
      const { type, payload } = eventOf(req);
      if (type !== 'call.initiated' || str(payload.direction) !== 'incoming') return undefined;
      return { callSid: str(payload.call_control_id), from: str(payload.from), to: str(payload.to), accountSid: str(payload.connection_id) };
    },

    parseEvents(req): CarrierCallEvent[] {
      const { type, payload } = eventOf(req);
      const sid = str(payload.call_control_id);
      const state = decodeState(payload.client_state);
      switch (type) {
        case 'call.initiated':
          return [{ kind: 'status', callSid: sid, status: 'initiated' }];
        case 'call.answered':
          return [{ kind: 'status', callSid: sid, status: 'in-progress' }];
        case 'call.hangup': {
          const start = Date.parse(str(payload.start_time));
          const end = Date.parse(str(payload.end_time));
          const durationS = Number.isFinite(start) && Number.isFinite(end) && end >= start ? Math.round((end - start) / 1000) : undefined;
          return [{ kind: 'status', callSid: sid, status: finalStatus(str(payload.hangup_cause)), durationS }];
        }
        case 'call.machine.detection.ended':
        case 'call.machine.premium.detection.ended': {
          const result = str(payload.result);
          if (result === 'human' || result === 'human_residence' || result === 'human_business') return [{ kind: 'amd', callSid: sid, answeredBy: 'human' }];
          if (result === 'machine' && state.b) return []; // the verdict is the greeting's end
          return [{ kind: 'amd', callSid: sid, answeredBy: result === 'machine' ? 'machine_start' : 'unknown' }];
        }
        case 'call.machine.greeting.ended':
        case 'call.machine.premium.greeting.ended':
          return state.b ? [{ kind: 'amd', callSid: sid, answeredBy: str(payload.result) === 'beep_detected' ? 'machine_end_beep' : 'machine_end_other' }] : [];
        case 'streaming.stopped':
          return [{ kind: 'stream_ended', callSid: sid }];
        case 'call.recording.saved': {
          const urls = rec(payload.recording_urls);
          return [{ kind: 'recording', callSid: sid, url: str(urls.mp3) || str(urls.wav), sid: str(payload.recording_id) }];
        }
        default:
          return [{ kind: 'ignored', type: type || 'unknown' }];
      }
    },
  };
}
