/**
 * A Telnyx Call Control simulator (the same role as carrier.ts for Twilio, same call scenarios):
 *
 * - REST (Bearer API key, JSON): `POST /v2/calls` (dial: `connection_id`, `to`, `from`,
 *   `webhook_url`, `stream_url`, `answering_machine_detection`, `record`, `client_state`) answering
 *   `{data: {call_control_id, ...}}`; `POST /v2/calls/{id}/actions/{answer|hangup|transfer|reject|
 *   record_start|speak|playback_start|streaming_start}`; `GET /v2/calls/{id}` (`is_alive`,
 *   `client_state`); errors as `{errors: [{code, title, detail}]}`. A command repeating a
 *   `command_id` of its call is answered 200 and ignored; commands that need an answered call
 *   (speak, playback, streaming) are refused (422) before it.
 * - Events: `{data: {event_type, id, occurred_at, payload}, meta}` posted to the call's webhook URL,
 *   signed with Ed25519 (`telnyx-signature-ed25519` over `timestamp|body`, `telnyx-timestamp`)
 *   by a key pair of its own (`publicKey`: base64 raw 32 bytes, as the portal shows it). Every
 *   event carries the call's `client_state` (the last command's). An event we answer with an error
 *   is retried as the answer's `webhook_retries_policies` says (`meta.attempt` counting up).
 * - Answered calls stream to `stream_url` in the Telnyx dialect (`MediaStreamCall`, same link
 *   model: jitter, reorder, loss); the stream ending from our side posts `streaming.stopped`.
 *   `streaming_start` starts that stream on an answered call.
 * - Audio (telnyx-call.ts): `speak` and `playback_start` queue and play in turn, with
 *   `call.speak.started/ended` and `call.playback.started/ended` (payload: the call's ids,
 *   `client_state`, `status`; playback: `media_url`, `overlay`; no numbers, as Telnyx's schema
 *   has none). Durations are scaled (`mediaScale`): speech by its length, a WAV by its samples
 *   times `loop`; an `audio_url` is fetched (not 2xx: `file_not_found`). The caller hanging up
 *   ends the current audio with `call_hangup`.
 * - Inbound: `placeInboundCall` posts `call.initiated` (incoming) to the connection's webhook and
 *   waits for our `answer` (or `reject`); `callerHangup` is the caller putting the phone down.
 *   `/sim-media/<name>.wav` serves a 2 s WAV (hold audio for tests).
 * - Recordings: a `transfer` with `record` records the new leg (the callee's `dialRecording`, in
 *   the format and channels asked for) and sends `call.recording.saved` to that leg's webhook URL
 *   after the hang-up, naming a pre-signed link to its media store (valid 10 minutes; a wrong or
 *   missing signature is 403, an `Authorization` header 400, as S3 answers).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHmac, generateKeyPairSync, randomBytes, randomUUID, timingSafeEqual, type KeyObject } from 'node:crypto';
import { signTelnyx } from '../../control-plane/telephony/carriers/telnyx-signature.js';
import { encodeWav } from '../../shared/providers/audio/wav.js';
import type { CalleeBehaviour, SentCallback } from './carrier.js';
import { MediaStreamCall } from './media-call.js';
import { SimRecordings } from './recordings.js';
import { loadPlayback, playAudio, refusal, retriesOf, statusOf, TelnyxCall, type TelnyxAudio } from './telnyx-call.js';
import type { Ticker } from './ticker.js';

export { TelnyxCall, type TelnyxCallState } from './telnyx-call.js';

export interface TelnyxSimOptions {
  /** API keys accepted (Bearer). */
  apiKeys: string[];
  callee?: (to: string) => CalleeBehaviour;
  ticker?: Ticker;
  /** Codec of the streams (PCMU default). */
  codec?: 'pcmu' | 'pcma';
  /** Played audio and event retry delays run this fraction of real time (default 0.01: a 10 s pause takes 100 ms). */
  mediaScale?: number;
}

/** Speech plays about this long per character (before `mediaScale`). */
const SPEECH_MS_PER_CHAR = 70;
/** What `/sim-media/*.wav` serves: 2 s of silence. */
const SIM_MEDIA_WAV = encodeWav(new Int16Array(16_000), 8000);

const E164 = /^\+[1-9]\d{6,14}$/;
/** Where the simulated media store serves recordings (Telnyx: an S3 bucket). */
const RECORDINGS_PATH = '/telephony-recorder-prod/';
/** `recording_urls` are valid 10 minutes (Telnyx `call.recording.saved`). */
const RECORDING_LINK_TTL_S = 600;

export class TelnyxSim {
  readonly calls = new Map<string, TelnyxCall>();
  readonly requests: Array<{ method: string; path: string; body: Record<string, unknown>; status: number; authorization?: string }> = [];
  /** Recordings of transferred legs (`record` on `transfer`), behind pre-signed links. */
  readonly recordings = new SimRecordings();
  /** Signs the pre-signed recording links (the media store's key, not the account's). */
  private readonly storageKey = randomBytes(16);
  readonly publicKey: string;
  failNextAction?: { status: number; code: string; detail: string };
  private readonly privateKey: KeyObject;
  private server?: Server;
  private baseUrl = '';

  constructor(readonly o: TelnyxSimOptions) {
    const { publicKey, privateKey } = generateKeyPairSync('ed25519');
    this.privateKey = privateKey;
    // The raw 32 bytes: the last 32 of the SPKI DER encoding.
    this.publicKey = publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64');
  }

  get url(): string {
    return this.baseUrl;
  }

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.receive(req, res));
    this.server = server;
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    this.baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    return this.baseUrl;
  }

  async close(): Promise<void> {
    for (const c of this.calls.values()) c.media?.hangup();
    const s = this.server;
    this.server = undefined;
    if (!s) return;
    s.closeAllConnections();
    await new Promise<void>((r) => s.close(() => r()));
  }

  async waitForCall(pred: (c: TelnyxCall) => boolean, timeoutMs = 5000): Promise<TelnyxCall> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const c = [...this.calls.values()].reverse().find(pred);
      if (c) return c;
      if (Date.now() > end) throw new Error('telnyx sim: no such call in time');
      await sleep(10);
    }
  }

  /**
   * An inbound call: `call.initiated` to the connection's webhook; the call then waits for `answer`.
   * `lose`: event types Telnyx will not deliver on this call.
   */
  async placeInboundCall(o: { webhookUrl: string; from: string; to: string; connectionId: string; behaviour?: CalleeBehaviour; forge?: boolean; lose?: string[] }): Promise<TelnyxCall> {
    const call = new TelnyxCall(`v3:${randomBytes(18).toString('base64url')}`, 'incoming', o.from, o.to, { webhook_url: o.webhookUrl, connection_id: o.connectionId }, o.behaviour ?? {});
    for (const t of o.lose ?? []) call.lost.add(t);
    this.calls.set(call.callControlId, call);
    call.state = 'ringing';
    await this.event(call, 'call.initiated', { direction: 'incoming', state: 'parked' }, o.forge);
    return call;
  }

  /** The caller puts the phone down (`call.hangup`, `hangup_source: caller`). */
  async callerHangup(call: TelnyxCall): Promise<void> {
    await this.hangup(call, 'normal_clearing', 'caller');
  }

  /**
   * Posts any event of `call` (tests: forged or replayed events). `bare`: the payload names the
   * call by its ids only (speak and playback events carry no numbers).
   */
  async event(call: TelnyxCall, type: string, extra: Record<string, unknown> = {}, forge = false, url = call.webhookUrl, bare = false): Promise<{ status: number; body: string }> {
    const payload = {
      call_control_id: call.callControlId,
      call_leg_id: randomUUID(),
      call_session_id: randomUUID(),
      connection_id: String(call.dial.connection_id ?? ''),
      client_state: call.clientState,
      ...(bare ? {} : { from: call.from, to: call.to, direction: call.direction }),
      ...extra,
    };
    if (call.lost.has(type) && !forge) {
      call.callbacks.push({ kind: type as SentCallback['kind'], url, params: { event_type: type }, status: 0, body: 'lost', atMs: performance.now() });
      return { status: 0, body: 'lost' };
    }
    const id = randomUUID();
    const delays = forge ? [] : (call.retries[type] ?? []);
    let res = { status: 0, body: '' };
    for (let attempt = 1; attempt <= delays.length + 1; attempt++) {
      if (attempt > 1) await sleep(delays[attempt - 2]! * this.scale);
      const body = JSON.stringify({ data: { record_type: 'event', event_type: type, id, occurred_at: new Date().toISOString(), payload }, meta: { attempt, delivered_to: url } });
      res = await this.post(call, type, url, body, forge);
      if (res.status >= 200 && res.status < 300) break;
    }
    return res;
  }

  private get scale(): number {
    return this.o.mediaScale ?? 0.01;
  }

  // ------------------------------------------------------------------ REST

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    let body: Record<string, unknown> = {};
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8') || '{}') as Record<string, unknown>;
    } catch {
      body = {};
    }
    const url = new URL(req.url ?? '/', 'http://sim');
    const path = url.pathname;
    const answer = (status: number, out: unknown) => {
      this.requests.push({ method: req.method ?? '', path, body, status, authorization: req.headers.authorization });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    };
    // The media store: pre-signed links, no API key (it refuses a second auth mechanism, as S3 does).
    if (req.method === 'GET' && path.startsWith(RECORDINGS_PATH)) return this.download(req, url, res);
    if (req.method === 'GET' && /^\/sim-media\/[\w-]+\.wav$/.test(path)) {
      res.writeHead(200, { 'content-type': 'audio/wav' });
      return void res.end(SIM_MEDIA_WAV);
    }
    const fail = (status: number, code: string, detail: string) => answer(status, { errors: [{ code, title: detail, detail }] });
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !this.o.apiKeys.includes(auth.slice(7))) return fail(401, '10009', 'Authentication failed');
    const status = req.method === 'GET' ? /^\/v2\/calls\/([^/]+)$/.exec(path) : null;
    if (status) {
      const c = this.calls.get(decodeURIComponent(status[1]!));
      return c ? answer(200, { data: statusOf(c) }) : fail(404, '10005', 'Resource not found');
    }
    if (req.method !== 'POST') return fail(404, '10005', 'Resource not found');
    if (path === '/v2/calls') return this.dial(body, answer, fail);
    const m = /^\/v2\/calls\/([^/]+)\/actions\/([a-z_]+)$/.exec(path);
    const call = m ? this.calls.get(decodeURIComponent(m[1]!)) : undefined;
    if (!m || !call) return fail(404, '10005', 'Resource not found');
    if (this.failNextAction) {
      const f = this.failNextAction;
      this.failNextAction = undefined;
      return fail(f.status, f.code, f.detail);
    }
    if (call.isOver) return fail(422, '90018', 'Call has already ended');
    const name = m[2]!;
    // Telnyx ignores a command whose command_id this call has seen.
    const commandId = typeof body.command_id === 'string' ? body.command_id : '';
    if (commandId && call.commandIds.has(commandId)) {
      call.ignored.push({ name, body });
      return answer(200, { data: { result: 'ok' } });
    }
    const refused = refusal(call, name, body);
    if (refused) return fail(422, '90018', refused);
    if (commandId) call.commandIds.add(commandId);
    if (typeof body.client_state === 'string') call.clientState = body.client_state;
    call.actions.push({ name, body });
    answer(200, { data: { result: 'ok' } });
    void this.act(call, name, body);
  }

  private dial(body: Record<string, unknown>, answer: (s: number, b: unknown) => void, fail: (s: number, c: string, d: string) => void): void {
    const to = String(body.to ?? '');
    const from = String(body.from ?? '');
    if (!E164.test(to)) return fail(422, '10016', `Invalid 'to' number ${to}`);
    if (!E164.test(from)) return fail(422, '10016', `Invalid 'from' number ${from}`);
    if (!body.connection_id) return fail(422, '10015', 'connection_id is required');
    const call = new TelnyxCall(`v3:${randomBytes(18).toString('base64url')}`, 'outgoing', from, to, body, this.o.callee?.(to) ?? {});
    this.calls.set(call.callControlId, call);
    answer(200, { data: { call_control_id: call.callControlId, call_leg_id: randomUUID(), call_session_id: randomUUID(), is_alive: false, record_type: 'call' } });
    void this.runOutbound(call);
  }

  private async act(call: TelnyxCall, name: string, body: Record<string, unknown>): Promise<void> {
    switch (name) {
      case 'answer':
        if (typeof body.webhook_url === 'string') call.webhookUrl = body.webhook_url;
        call.retries = retriesOf(body.webhook_retries_policies);
        Object.assign(call.dial, { stream_url: body.stream_url });
        return this.answered(call);
      case 'speak': {
        const audio: TelnyxAudio = { kind: 'speak', what: String(body.payload), durationMs: String(body.payload).length * SPEECH_MS_PER_CHAR * this.scale, clientState: call.clientState, mediaUrl: '' };
        return this.queueAudio(call, async () => audio);
      }
      case 'playback_start': {
        const state = call.clientState;
        return this.queueAudio(call, () => loadPlayback(state, body, this.scale));
      }
      case 'streaming_start':
        call.dial.stream_url = body.stream_url;
        return this.stream(call, String(body.stream_url));
      case 'reject':
        return this.hangup(call, 'call_rejected');
      case 'hangup':
        return this.hangup(call, 'normal_clearing');
      case 'record_start':
        call.recorded = true;
        return;
      case 'transfer': {
        call.transferredTo = String(body.to ?? '');
        // The call's own events stay on its webhook; the new leg's (its recording) go to the transfer's.
        // The AI leg's stream stops as the call is bridged to the new party.
        call.media?.stopStream();
        await this.event(call, 'call.bridged', { to: call.transferredTo });
        const answeredAt = new Date();
        await sleep(call.behaviour.dialDurationMs ?? 300);
        await this.hangup(call, 'normal_clearing');
        // `record: record-from-answer` on the transfer: the new leg's recording, saved after the hang-up.
        if (body.record === 'record-from-answer' && typeof body.webhook_url === 'string') {
          const url = body.webhook_url;
          setTimeout(() => void this.legRecordingSaved(call, url, body, answeredAt), call.behaviour.dialRecordingDelayMs ?? 100);
        }
        return;
      }
      default:
        return;
    }
  }

  // ------------------------------------------------------------------ call progress

  private async runOutbound(call: TelnyxCall): Promise<void> {
    const b = call.behaviour;
    await this.event(call, 'call.initiated', { state: 'bridging' });
    call.state = 'ringing';
    await sleep(b.ringMs ?? 100);
    if (call.isOver) return;
    const outcome = b.outcome ?? 'answer';
    if (outcome !== 'answer') return this.hangup(call, outcome === 'busy' ? 'user_busy' : outcome === 'no-answer' ? 'timeout' : 'call_rejected');
    if (call.dial.record === 'record-from-answer') call.recorded = true;
    await this.answered(call);
  }

  private async answered(call: TelnyxCall): Promise<void> {
    call.state = 'answered';
    call.answeredAtMs = Date.now();
    await this.event(call, 'call.answered', { state: 'answered' });
    const amd = call.dial.answering_machine_detection;
    const b = call.behaviour;
    if ((amd === 'detect' || amd === 'detect_beep') && b.answeredBy !== null) {
      setTimeout(() => void this.amdEvents(call, String(amd)), b.amdDelayMs ?? 800);
    }
    const url = call.dial.stream_url;
    if (typeof url === 'string') await this.stream(call, url);
  }

  /** The stream of an answered call (at the answer, or `streaming_start` later). */
  private async stream(call: TelnyxCall, url: string): Promise<void> {
    const b = call.behaviour;
    const media = new MediaStreamCall({ url, callSid: call.callControlId, accountSid: '', customParameters: {}, link: b.link, ticker: this.o.ticker, dialect: 'telnyx', codec: this.o.codec });
    call.media = media;
    try {
      await media.connect();
    } catch {
      return;
    }
    await this.event(call, 'streaming.started', { stream_url: url });
    call.resolveMedia(media);
    void Promise.resolve(b.onMedia?.(media as never, call as never)).catch(() => {});
    await media.closed();
    if (call.isOver) return;
    if (media.closedByCarrier) {
      // The callee hung up (the test's `media.hangup()`): the call ends.
      if (!call.transferredTo) await this.hangup(call, 'normal_clearing');
      return;
    }
    // Our side closed the stream: the call goes on until someone hangs it up (Telnyx semantics).
    await this.event(call, 'streaming.stopped', { stream_url: url });
  }

  /** Twilio-style `answeredBy` of the behaviour -> Telnyx detection results. */
  private async amdEvents(call: TelnyxCall, mode: string): Promise<void> {
    if (call.isOver) return;
    const by = call.behaviour.answeredBy ?? 'human';
    const result = by === 'human' ? 'human' : by.startsWith('machine') || by === 'fax' ? 'machine' : 'not_sure';
    await this.event(call, 'call.machine.detection.ended', { result });
    if (mode === 'detect_beep' && result === 'machine' && !call.isOver) {
      await sleep(50);
      await this.event(call, 'call.machine.greeting.ended', { result: by === 'machine_end_beep' ? 'beep_detected' : 'ended' });
    }
  }

  /** Queues an audio command behind the call's current audio (`load` fetches or decodes it in turn). */
  private queueAudio(call: TelnyxCall, load: () => Promise<TelnyxAudio>): void {
    const send = (type: string, extra: Record<string, unknown>) => this.event(call, type, extra, false, call.webhookUrl, true);
    call.audio = call.audio.then(async () => playAudio(call, await load(), send)).catch(() => {});
  }

  private async hangup(call: TelnyxCall, cause: string, source = 'callee'): Promise<void> {
    if (call.isOver) return;
    call.state = 'hangup';
    call.hangupCause = cause;
    call.hangupSource = source;
    call.endedAt = new Date();
    call.media?.hangup();
    await this.event(call, 'call.hangup', { hangup_cause: cause, hangup_source: source, start_time: call.startedAt.toISOString(), end_time: call.endedAt.toISOString() });
    if (call.recorded && call.answeredAtMs) {
      const id = randomUUID();
      await this.event(call, 'call.recording.saved', { recording_id: id, recording_urls: { mp3: `${this.baseUrl}/recordings/${id}.mp3` }, channels: 'single' });
    }
    call.resolveEnded(cause);
  }

  /**
   * `call.recording.saved` of a transferred leg as Telnyx sends it to that leg's webhook URL: the
   * file in the format and channels the transfer asked for (`record_format`, `record_channels`;
   * mp3 and single by default), behind a pre-signed link valid 10 minutes.
   */
  private async legRecordingSaved(call: TelnyxCall, url: string, asked: Record<string, unknown>, startedAt: Date): Promise<void> {
    const format = asked.record_format === 'wav' ? 'wav' : 'mp3';
    const channels = asked.record_channels === 'dual' ? 'dual' : 'single';
    const id = randomUUID();
    this.recordings.record(id, call.behaviour, { channels: channels === 'dual' ? 2 : 1, format });
    const link = this.presign(`${RECORDINGS_PATH}${id}.${format}`, Date.now());
    const payload = {
      connection_id: String(call.dial.connection_id ?? ''),
      call_leg_id: randomUUID(),
      call_session_id: randomUUID(),
      recording_started_at: startedAt.toISOString(),
      recording_ended_at: new Date().toISOString(),
      channels,
      recording_urls: { mp3: format === 'mp3' ? link : null, wav: format === 'wav' ? link : null },
      public_recording_urls: { mp3: null, wav: null },
    };
    const body = JSON.stringify({ data: { record_type: 'event', event_type: 'call.recording.saved', id: randomUUID(), occurred_at: new Date().toISOString(), payload }, meta: { attempt: 1, delivered_to: url } });
    await this.post(call, 'call.recording.saved', url, body);
  }

  /** A pre-signed link to `path`, valid for RECORDING_LINK_TTL_S from `atMs`. */
  presign(path: string, atMs: number): string {
    const q = new URLSearchParams({ 'X-Amz-Date': String(atMs), 'X-Amz-Expires': String(RECORDING_LINK_TTL_S) });
    q.set('X-Amz-Signature', createHmac('sha256', this.storageKey).update(`${path}?${q}`).digest('hex'));
    return `${this.baseUrl}${path}?${q}`;
  }

  private download(req: IncomingMessage, url: URL, res: ServerResponse): void {
    const storageError = (status: number, code: string) => {
      this.requests.push({ method: 'GET', path: url.pathname, body: {}, status, authorization: req.headers.authorization });
      res.writeHead(status, { 'content-type': 'application/xml' });
      res.end(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>${code}</Code></Error>`);
    };
    if (req.headers.authorization) return storageError(400, 'InvalidArgument');
    const q = new URLSearchParams(url.searchParams);
    const sig = q.get('X-Amz-Signature') ?? '';
    q.delete('X-Amz-Signature');
    const want = createHmac('sha256', this.storageKey).update(`${url.pathname}?${q}`).digest('hex');
    if (sig.length !== want.length || !timingSafeEqual(Buffer.from(sig), Buffer.from(want))) return storageError(403, 'SignatureDoesNotMatch');
    if (Date.now() > Number(q.get('X-Amz-Date')) + Number(q.get('X-Amz-Expires')) * 1000) return storageError(403, 'AccessDenied');
    const media = this.recordings.take(url.pathname.slice(RECORDINGS_PATH.length).replace(/\.(wav|mp3)$/, ''));
    if (!media) return storageError(404, 'NoSuchKey');
    this.requests.push({ method: 'GET', path: url.pathname, body: {}, status: 200 });
    res.writeHead(200, { 'content-type': 'audio/wav', 'content-length': String(media.byteLength) });
    res.end(media);
  }

  /** A signed JSON POST to our service; `forge` signs with a key that is not the account's. */
  private async post(call: TelnyxCall, kind: string, url: string, body: string, forge = false): Promise<{ status: number; body: string }> {
    const ts = String(Math.floor(Date.now() / 1000));
    const key = forge ? generateKeyPairSync('ed25519').privateKey : this.privateKey;
    const headers = { 'content-type': 'application/json', 'telnyx-timestamp': ts, 'telnyx-signature-ed25519': signTelnyx(key, body, ts) };
    let status = 0;
    let text = '';
    const atMs = performance.now();
    try {
      const res = await fetch(url, { method: 'POST', headers, body, signal: AbortSignal.timeout(10_000) });
      status = res.status;
      text = await res.text();
    } catch (err) {
      text = (err as Error).message;
    }
    call.callbacks.push({ kind: kind as SentCallback['kind'], url, params: { event_type: kind }, status, body: text, atMs });
    return { status, body: text };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
