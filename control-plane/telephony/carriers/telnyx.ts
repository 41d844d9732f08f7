/**
 * Telnyx Call Control (API v2): event-driven. We dial with `POST /v2/calls` (Bearer API key, JSON;
 * the stream, AMD and recording are dial options), act on live calls with
 * `POST /v2/calls/{call_control_id}/actions/{answer|hangup|transfer|record_start|speak|playback_start|streaming_start}`
 * (and read one with `GET /v2/calls/{call_control_id}`), and
 * Telnyx posts JSON events (`call.initiated`, `call.answered`, `call.hangup`,
 * `call.machine.detection.ended`, `call.machine.greeting.ended`, `call.recording.saved`, ...)
 * signed with Ed25519 (telnyx-signature.ts). Inbound calls arrive as `call.initiated` on the
 * connection's webhook URL (`/telephony/calls/inbound/telnyx`); we answer by REST with our stream
 * and this call's events URL (`/telephony/calls/{call_id}/events/telnyx`).
 *
 * Credentials: `account_sid` = the Call Control connection (application) id, `auth_token` = the
 * API key (`KEY…`), `public_key` = the webhook public key (base64), `person_uri` (the portal
 * hand-off's SIP address, default `sip:{identity}@sip.telnyx.com`: a credential connection's user
 * name, SIP URI calling enabled). Environment fallback: TELNYX_CONNECTION_ID, TELNYX_API_KEY,
 * TELNYX_PUBLIC_KEY, TELNYX_PERSON_URI; TELNYX_API_BASE_URL (default https://api.telnyx.com) for tests.
 *
 * Portal hand-off: `transfer` to the person's SIP URI, recording that leg (dual, WAV); its events,
 * `call.recording.saved` among them, come to `?leg=person` (a pre-signed link, fetched without the
 * API key).
 *
 * Refusals and hold (docs/telephony.md "Telnyx"), like Twilio's `<Say><Hangup/>` and hold loop but
 * driven by events: the call is answered without a stream, a refusal is an `actions/speak` whose
 * `call.speak.ended` comes back to the inbound route and is answered with `actions/hangup`; a hold
 * round is an `actions/playback_start` (the agent's hold audio, or a pause: a second of silence
 * looped) whose `call.playback.ended` tries for a seat again, and a freed seat starts the stream
 * on the answered call (`actions/streaming_start`). Those end events carry no numbers: our
 * `client_state` does (the step, the round, the dialled number and the caller). Every command has a
 * `command_id` (Telnyx ignores a repeated one for 60 s), so a duplicated or retried event repeats
 * nothing; the answer asks Telnyx to retry the end events we act on when we answer an error.
 */
import type { Config } from '../../../shared/config.js';
import { encodeWav } from '../../../shared/providers/audio/wav.js';
import { carrierRequest, trimBase } from './http.js';
import { verifyTelnyxSignature } from './telnyx-signature.js';
import { personAddress, personUriField } from './person.js';
import { fetchableUrl, isPersonLeg, personLegUrl, recordingRef } from './recording.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type CarrierCallEvent, type DialRequest, type InboundAction, type InboundCall, type PendingStep, type WebhookRequest } from './types.js';

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
  /** An inbound call answered without a stream: `r` a refusal is being spoken, `h` a hold round plays. */
  s?: 'r' | 'h';
  /** Hold: the round the end of this round's audio comes back for. */
  n?: number;
  /** Hold: this round is a pause (no hold audio, or it could not be played): so are the next ones. */
  p?: 1;
  /** The dialled number and the caller: the speak and playback events do not carry them. */
  t?: string;
  f?: string;
}

/** Longest `client_state` we read back (ours are under 200 characters). */
const MAX_STATE_CHARS = 1024;
/** Bounds of what a decoded state may hold (it comes back in a signed event, but is parsed at the edge). */
const MAX_ROUND = 10_000;
const MAX_NUMBER_CHARS = 32;

function encodeState(s: ClientState): string {
  return Buffer.from(JSON.stringify(s)).toString('base64');
}

function decodeState(v: unknown): ClientState {
  if (typeof v !== 'string' || v.length > MAX_STATE_CHARS) return {};
  let o: Record<string, unknown>;
  try {
    o = rec(JSON.parse(Buffer.from(v, 'base64').toString('utf8')));
  } catch {
    return {};
  }
  const out: ClientState = {};
  if (o.b === 1) out.b = 1;
  if (o.s === 'r' || o.s === 'h') out.s = o.s;
  if (typeof o.n === 'number' && Number.isInteger(o.n) && o.n >= 0 && o.n <= MAX_ROUND) out.n = o.n;
  if (o.p === 1) out.p = 1;
  if (typeof o.t === 'string' && o.t.length <= MAX_NUMBER_CHARS) out.t = o.t;
  if (typeof o.f === 'string' && o.f.length <= MAX_NUMBER_CHARS) out.f = o.f;
  return out;
}

/** `speak` options: Telnyx's basic voice (`payload` is capped at 3,000 characters). */
const SPEAK = { voice: 'female', language: 'en-US', payload_type: 'text' } as const;
const SPEAK_MAX_CHARS = 3000;
/** `playback_start` plays a file at most 100 times (`loop`): the longest pause is 100 s. */
const MAX_LOOP = 100;
/** A second of silence (8 kHz 16-bit WAV, base64): a hold pause is it looped `pauseS` times (`playback_content`). */
const SILENCE_1S_WAV = Buffer.from(encodeWav(new Int16Array(8000), 8000)).toString('base64');
/**
 * The end events we act on are retried by Telnyx when we answer an error (a carrier command that
 * failed): at most 5 retries within 60 s (`webhook_retries_policies` of `answer`).
 */
const STEP_RETRIES = { retries_ms: [1000, 2000, 4000, 8000, 16000] };
const STEP_EVENT_RETRIES = { 'call.speak.ended': STEP_RETRIES, 'call.playback.ended': STEP_RETRIES };

const rec = (v: unknown): Record<string, unknown> => (v && typeof v === 'object' && !Array.isArray(v) ? (v as Record<string, unknown>) : {});
const str = (v: unknown): string => (typeof v === 'string' ? v : '');

/**
 * The audio of a refusal (`speak`, state `r`) or of a hold round (the announcement, then a
 * `playback_start` of the hold audio or of a second of silence looped `pauseS` times, state `h`
 * with the next round) on an answered call; what its end event will carry back.
 */
async function spokenStep(act: (name: string, body: Record<string, unknown>) => Promise<unknown>, call: InboundCall, a: Extract<InboundAction, { sayAndHangup: string } | { hold: unknown }>): Promise<PendingStep> {
  const who = numbersOf(call);
  if ('sayAndHangup' in a) {
    const state = encodeState({ s: 'r', ...who });
    await act('speak', { ...SPEAK, payload: a.sayAndHangup.slice(0, SPEAK_MAX_CHARS), client_state: state, command_id: 'vp-refusal' });
    return { state, playS: 0 };
  }
  const h = a.hold;
  // Queued before the round's audio (Telnyx plays speak and playback commands in turn).
  if (h.announce) await act('speak', { ...SPEAK, payload: h.announce.slice(0, SPEAK_MAX_CHARS), command_id: 'vp-hold-announce' });
  const loop = Math.min(MAX_LOOP, Math.max(1, Math.round(h.pauseS)));
  const state = encodeState({ s: 'h', n: h.nextRound, ...(h.holdAudioUrl ? {} : { p: 1 as const }), ...who });
  const audio = h.holdAudioUrl ? { audio_url: h.holdAudioUrl, cache_audio: true } : { playback_content: SILENCE_1S_WAV, audio_type: 'wav', loop };
  await act('playback_start', { ...audio, client_state: state, command_id: `vp-hold-${h.nextRound}` });
  return { state, playS: h.holdAudioUrl ? undefined : loop };
}

/** The numbers a step's state carries (bounded like `decodeState` reads them). */
function numbersOf(call: InboundCall): { t: string; f: string } {
  return { t: call.to.slice(0, MAX_NUMBER_CHARS), f: call.from.slice(0, MAX_NUMBER_CHARS) };
}

/** The event envelope: `{data: {event_type, payload}}` (also accepted without `data`). */
function eventOf(req: WebhookRequest): { type: string; payload: Record<string, unknown> } {
  const body = rec(req.json);
  const data = body.data !== undefined ? rec(body.data) : body;
  return { type: str(data.event_type), payload: rec(data.payload) };
}

/** Transfer options recording the person's leg (Call Control `transfer`: `record`, `record_channels`, `record_format`). */
const PERSON_RECORDING = { record: 'record-from-answer', record_channels: 'dual', record_format: 'wav' } as const;

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
  /** Call Control `transfer` to a number or a SIP URI; the new leg's events come to `webhookUrl` (the call's route). */
  const transferTo = (account: CarrierAccount, callSid: string, to: string, from: string, webhookUrl: string, extra: Record<string, unknown> = {}) =>
    action(account, callSid, 'transfer', { to, from, webhook_url: webhookUrl, webhook_url_method: 'POST', ...extra });
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
      personUriField({ app: false }),
    ],
    detect: (sid, token) => API_KEY.test(token) || API_KEY.test(sid),
    envAccount: (c) => {
      const e = c.carrierEnv;
      if (!e.TELNYX_API_KEY && !e.TELNYX_CONNECTION_ID && !e.TELNYX_PUBLIC_KEY && !e.TELNYX_PERSON_URI) return undefined;
      return { carrier: 'telnyx', accountSid: e.TELNYX_CONNECTION_ID ?? '', authToken: e.TELNYX_API_KEY ?? '', extra: { public_key: e.TELNYX_PUBLIC_KEY ?? '', person_uri: e.TELNYX_PERSON_URI ?? '' } };
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
      await transferTo(account, callSid, req.toNumber, req.callerId, `${req.callbackBase}/events/telnyx`);
    },

    // Call Control's transfer takes a SIP URI as well as a number: the person's leg replaces ours
    // (the stream stops) and its end comes to the call's events like a cold transfer's. The leg
    // is recorded from its answer in two channels ("the first leg on channel A": the caller), as
    // WAV; its events, `call.recording.saved` among them (after the hang-up), come marked
    // `?leg=person`, so that recording is told apart from the whole call's (`record_calls`).
    handoff: {
      address: (account, identity) => personAddress(account, identity, 'sip:{identity}@sip.telnyx.com'),
      async dial(account, callSid, req) {
        await transferTo(account, callSid, req.address, req.callerId, personLegUrl(`${req.callbackBase}/events/telnyx`), PERSON_RECORDING);
      },
      recordingInCallback: true,
    },

    // `recording_urls` are pre-signed links to Telnyx's media storage, valid 10 minutes: the link
    // is the credential. Fetched without any (the API key never leaves for a media host), from
    // wherever the link points (through the outbound client's address policy).
    recordingRequest(_account, url) {
      const u = fetchableUrl(url);
      return u && { url: u.toString(), headers: {} };
    },

    async startRecording(account, callSid) {
      await action(account, callSid, 'record_start', { format: 'mp3', channels: 'single' });
    },

    async answerInbound(account, call, a) {
      const act = (name: string, body: Record<string, unknown>) => action(account, call.callSid, name, body);
      // A call with a step was answered by us for a refusal or hold.
      const answered = Boolean(call.step);
      if ('hangup' in a) {
        await act('hangup', { command_id: 'vp-hangup' });
        return undefined;
      }
      if ('connect' in a) {
        const { streamUrl, params, callbackBase } = a.connect;
        // A call answered for hold keeps the application's webhook URL (only `answer` and `transfer`
        // name one): its later events come to the inbound route, which hands them to the call.
        if (answered) await act('streaming_start', { ...streamOptions(streamUrl, params), client_state: encodeState({}), command_id: 'vp-stream' });
        else await act('answer', { webhook_url: `${callbackBase}/events/telnyx`, webhook_url_method: 'POST', client_state: encodeState({}), ...streamOptions(streamUrl, params) });
        return undefined;
      }
      if (!answered) await act('answer', { webhook_retries_policies: STEP_EVENT_RETRIES, command_id: 'vp-answer' });
      try {
        return await spokenStep(act, call, a);
      } catch (err) {
        // Answered just now and nothing will play: hang up rather than leave the caller on a silent line.
        if (!answered) await act('hangup', { command_id: 'vp-hangup' }).catch(() => undefined);
        throw err;
      }
    },

    // `GET /v2/calls/{call_control_id}`: `is_alive` and the `client_state` the last command set.
    async callState(account, callSid) {
      try {
        const r = await carrierRequest({ method: 'GET', url: `${base()}/calls/${encodeURIComponent(callSid)}`, auth: { bearer: account.authToken } });
        const d = rec(r.data);
        return { alive: d.is_alive === true, state: str(d.client_state) };
      } catch (err) {
        if (err instanceof CarrierError && err.status === 404) return undefined;
        throw err;
      }
    },

    verifyWebhook(req, account, cfg) {
      const key = account?.extra.public_key || cfg.carrierEnv.TELNYX_PUBLIC_KEY || '';
      if (!key || cfg.carrierEnv.TELNYX_VERIFY_SIGNATURE === 'false') return true;
      return verifyTelnyxSignature(key, req.rawBody, req.headers.get('telnyx-signature-ed25519'), req.headers.get('telnyx-timestamp'), Math.floor(Date.now() / 1000));
    },

    // `call.initiated` (incoming) starts an inbound call; the end of a refusal's speech or of a
    // hold round's audio (our client_state) is its next step. Anything else: not an inbound webhook.
    parseInbound(req) {
      const { type, payload } = eventOf(req);
      const call = { callSid: str(payload.call_control_id), from: str(payload.from), to: str(payload.to), accountSid: str(payload.connection_id) };
      if (type === 'call.initiated') return str(payload.direction) === 'incoming' ? call : undefined;
      const state = decodeState(payload.client_state);
      const status = str(payload.status);
      const stepCall = { ...call, from: state.f ?? '', to: state.t ?? '' };
      // `call_hangup`: the caller hung up during the speech; nothing to do.
      if (type === 'call.speak.ended' && state.s === 'r' && status !== 'call_hangup') return { ...stepCall, step: { kind: 'refused' } };
      if (type === 'call.playback.ended' && state.s === 'h' && state.n !== undefined) {
        if (status === 'completed') return { ...stepCall, step: { kind: 'hold', round: state.n, pauseOnly: state.p === 1 } };
        // The hold audio could not be played (its URL failed): the next rounds pause instead.
        if (status === 'file_not_found' || status === 'failed' || status === 'unknown') return { ...stepCall, step: { kind: 'hold', round: state.n, pauseOnly: true } };
      }
      return undefined;
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
          if (isPersonLeg(req.url)) {
            // The person's leg (asked for as WAV); the event names no recording id: the leg's id stands in.
            const ref = recordingRef(str(urls.wav) || str(urls.mp3), str(payload.recording_id) || str(payload.call_leg_id));
            return ref ? [{ kind: 'leg_recording', recording: ref }] : [{ kind: 'ignored', type }];
          }
          return [{ kind: 'recording', callSid: sid, url: str(urls.mp3) || str(urls.wav), sid: str(payload.recording_id) }];
        }
        default:
          return [{ kind: 'ignored', type: type || 'unknown' }];
      }
    },
  };
}
