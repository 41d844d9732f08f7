/**
 * A Twilio-faithful carrier simulator (docs/protocols.md sections 1-3) for tests and benchmarks:
 *
 * - REST: `POST /2010-04-01/Accounts/{sid}/Calls.json` (basic auth, form body; 201 + Call JSON with
 *   `sid` CA + 32 hex), `GET .../Calls/{CallSid}.json` (the call's status) and
 *   `POST .../Calls/{CallSid}.json` (`Status=completed|canceled`, `Twiml`),
 *   errors as `{code, message, more_info, status}` (20003, 20404, 21205, 21210, 21211).
 * - Call progress: status callbacks for the requested `StatusCallbackEvent`s (signed with
 *   `X-Twilio-Signature`), the async AMD callback with the callee's configured `AnsweredBy`, and
 *   a recording callback when `Record=true`.
 * - Answered calls run their TwiML: `<Connect><Stream>` dials back into the engine as a media
 *   stream (`MediaStreamCall`), `<Say>`, `<Play>`, `<Pause>` (scaled), `<Redirect>`, `<Dial>`
 *   (transfer: the `action` URL is posted when the leg ends), `<Hangup>`.
 * - Inbound: `placeInboundCall` posts the voice webhook and follows the TwiML it gets.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { randomBytes, randomUUID } from 'node:crypto';
import { computeSignature } from '../../control-plane/telephony/signature.js';
import type { LinkOptions } from './link.js';
import { MediaStreamCall } from './media-call.js';
import type { Ticker } from './ticker.js';
import { parseTwiml, streamOf, type TwimlNode } from './twiml.js';
import { SimRecordings } from './recordings.js';

export type SimCallStatus = 'queued' | 'ringing' | 'in-progress' | 'completed' | 'busy' | 'no-answer' | 'failed' | 'canceled';
const FINAL: ReadonlySet<SimCallStatus> = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

/** How the called party behaves (outbound calls). */
export interface CalleeBehaviour {
  /** Default `answer`. */
  outcome?: 'answer' | 'busy' | 'no-answer' | 'failed';
  /** The final status callback (`completed`, `busy`, ...) is lost on its way: never delivered, no retry (as a 5xx answer loses it at Twilio). */
  loseFinalStatus?: boolean;
  /** Ringing time before the outcome. Default 100 ms. */
  ringMs?: number;
  /** Time queued at the carrier (`queued`) before the phone rings. Default 20 ms. */
  queueMs?: number;
  /** `AnsweredBy` reported when AMD was requested; null: no verdict ever (timeout). Default `human`. */
  answeredBy?: string | null;
  /** Delay of the AMD verdict after answer. Default 800 ms. */
  amdDelayMs?: number;
  /** Network between carrier and engine for the callee's audio. */
  link?: LinkOptions;
  /** The carrier cannot open the `<Connect><Stream>` socket (as if unreachable): it runs the verbs after `</Connect>`. */
  streamFails?: boolean;
  /** The callee's side of the conversation, once its media stream is connected. */
  onMedia?: (media: MediaStreamCall, call: SimCall) => void | Promise<void>;
  /** Length of a transferred (`<Dial>`) leg. Default 300 ms. */
  dialDurationMs?: number;
  /** `DialCallStatus` of a transferred leg. Default `completed`. */
  dialStatus?: string;
  /**
   * The recording of the dialed leg (a transfer or a portal hand-off), two channels (the caller's
   * leg first): the WAV served at the URL the carrier names, behind that carrier's auth, as the
   * dial asked for it (mixed to mono without its dual-channel option, not a WAV when another
   * format was asked for: `recordingAs`). Absent: the URL is still named, and answers 404.
   */
  dialRecording?: Uint8Array;
  /** The recording answers 404 to this many downloads first (a carrier still finishing the file). Default 0. */
  dialRecordingNotReadyGets?: number;
  /** Carriers that name the recording in a callback of its own: that long after the leg ended. Default 100 ms. */
  dialRecordingDelayMs?: number;
}

export interface CarrierSimOptions {
  /** Account SID -> auth token. */
  accounts: Record<string, string>;
  /** When set, `From` must be one of these (else 21210, unverified caller id). */
  ownedNumbers?: string[];
  callee?: (to: string) => CalleeBehaviour;
  /** `<Pause length>` multiplier (default 0.01: a 10 s hold pause takes 100 ms). */
  pauseScale?: number;
  ticker?: Ticker;
  /**
   * A Twilio-compatible carrier other than Twilio: SignalWire's LaML is `{ pathPrefix:
   * '/api/laml', signatureHeader: 'x-signalwire-signature', signingKeys, lamlRecordings: true }`
   * (webhooks signed with the project's signing key instead of the API token). Default: Twilio.
   */
  flavor?: {
    pathPrefix: string;
    signatureHeader: string;
    signingKeys?: Record<string, string>;
    /**
     * SignalWire's recordings: UUID ids, named in the `<Dial action>` by `RecordingUrl` only (its
     * documented parameters have no `RecordingSid`), media without an extension or with `.wav`,
     * served without auth ("Retrieve a Recording": public, long random URLs).
     */
    lamlRecordings?: boolean;
  };
}

export interface SentCallback {
  kind: 'status' | 'amd' | 'recording' | 'webhook' | 'redirect' | 'dial_action';
  url: string;
  params: Record<string, string>;
  status: number;
  body: string;
  /** performance.now() when it was sent. */
  atMs: number;
}

export interface SimError {
  status: number;
  code: number;
  message: string;
}

export class SimCall {
  status: SimCallStatus = 'queued';
  media?: MediaStreamCall;
  readonly said: string[] = [];
  readonly played: string[] = [];
  readonly twiml: string[] = [];
  readonly callbacks: SentCallback[] = [];
  transferredTo?: string;
  dialAttrs?: Record<string, string>;
  answeredAtMs = 0;
  /** Inbound: the caller ID name (CNAM) the voice webhook carries as `CallerName`, when set. */
  callerName?: string;
  /** Bumped whenever the call's TwiML is replaced: older executions stop. */
  gen = 0;
  readonly ended: Promise<SimCallStatus>;
  readonly mediaReady: Promise<MediaStreamCall>;
  resolveEnded!: (s: SimCallStatus) => void;
  resolveMedia!: (m: MediaStreamCall) => void;

  constructor(
    readonly sid: string,
    readonly accountSid: string,
    readonly direction: 'inbound' | 'outbound-api',
    readonly from: string,
    readonly to: string,
    readonly createParams: URLSearchParams = new URLSearchParams(),
    readonly behaviour: CalleeBehaviour = {},
  ) {
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.mediaReady = new Promise((r) => (this.resolveMedia = r));
  }

  get isFinal(): boolean {
    return FINAL.has(this.status);
  }
}

const E164 = /^\+[1-9]\d{6,14}$/;

export class CarrierSim {
  readonly calls = new Map<string, SimCall>();
  readonly requests: Array<{ method: string; path: string; params: URLSearchParams; status: number }> = [];
  /** Recording media by RecordingSid (`<Dial record>` legs with `dialRecording`). */
  readonly recordings = new SimRecordings();
  /** Set to make the next create / update fail with this carrier error (then cleared). */
  failNextCreate?: SimError;
  failNextUpdate?: SimError;
  /** Set to make the next create place the call but drop the connection instead of answering (then cleared). */
  loseNextCreateAnswer?: boolean;
  /** The next call update is carried out but its answer never arrives (the connection drops). */
  loseNextUpdateAnswer?: boolean;
  private server?: Server;
  private baseUrl = '';

  constructor(readonly o: CarrierSimOptions) {}

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

  /** The newest call to `to` (outbound), waiting for it to be created. */
  async waitForCall(pred: (c: SimCall) => boolean, timeoutMs = 5000): Promise<SimCall> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const c = [...this.calls.values()].reverse().find(pred);
      if (c) return c;
      if (Date.now() > end) throw new Error('carrier sim: no such call in time');
      await sleep(10);
    }
  }

  /**
   * An inbound call: posts the voice webhook (signed with `authToken` when given) and runs the
   * TwiML it answers. Resolves once the first TwiML arrived (the call then runs on its own).
   */
  async placeInboundCall(o: { webhookUrl: string; from: string; to: string; accountSid: string; authToken?: string; behaviour?: CalleeBehaviour; callerName?: string }): Promise<SimCall> {
    const call = new SimCall(`CA${randomBytes(16).toString('hex')}`, o.accountSid, 'inbound', o.from, o.to, undefined, o.behaviour ?? {});
    call.callerName = o.callerName;
    this.calls.set(call.sid, call);
    call.status = 'ringing';
    const res = await this.post(call, 'webhook', o.webhookUrl, this.callParams(call), o.authToken);
    if (res.status !== 200) {
      this.complete(call, 'failed');
      return call;
    }
    call.status = 'in-progress';
    call.answeredAtMs = Date.now();
    void this.execute(call, res.body, call.gen, o.authToken);
    return call;
  }

  // ------------------------------------------------------------------ REST

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const params = new URLSearchParams(Buffer.concat(chunks).toString('utf8'));
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const answer = (status: number, body: unknown) => {
      this.requests.push({ method: req.method ?? '', path, params, status });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const fail = (e: SimError) => answer(e.status, { code: e.code, message: e.message, more_info: `https://www.twilio.com/docs/errors/${e.code}`, status: e.status });
    const prefix = this.o.flavor?.pathPrefix ?? '';
    const laml = this.o.flavor?.lamlRecordings === true;
    const recordingPath = laml ? /^\/2010-04-01\/Accounts\/([^/]+)\/Recordings\/([0-9a-f-]{36})(?:\.wav)?$/ : /^\/2010-04-01\/Accounts\/([^/]+)\/Recordings\/(RE[0-9a-f]{32})\.wav$/;
    const rec = req.method === 'GET' && path.startsWith(prefix) ? recordingPath.exec(path.slice(prefix.length)) : null;
    if (rec) {
      if (!laml && !this.authorized(req, decodeURIComponent(rec[1]!))) return fail({ status: 401, code: 20003, message: 'Authenticate' });
      const media = this.recordings.take(rec[2]!);
      if (!media) return fail({ status: 404, code: 20404, message: `The requested resource /Recordings/${rec[2]}.wav was not found` });
      this.requests.push({ method: 'GET', path, params, status: 200 });
      res.writeHead(200, { 'content-type': 'audio/x-wav', 'content-length': String(media.byteLength) });
      res.end(media);
      return;
    }
    const m = path.startsWith(prefix) ? /^\/2010-04-01\/Accounts\/([^/]+)\/Calls(?:\/([^/]+))?\.json$/.exec(path.slice(prefix.length)) : null;
    if (!m || (req.method !== 'POST' && !(req.method === 'GET' && m[2]))) return fail({ status: 404, code: 20404, message: 'The requested resource was not found' });
    const accountSid = decodeURIComponent(m[1]!);
    if (!this.authorized(req, accountSid)) return fail({ status: 401, code: 20003, message: 'Authenticate' });
    if (req.method === 'GET') {
      // Fetch a call: its current status (Twilio's Call resource).
      const known = this.calls.get(decodeURIComponent(m[2]!));
      if (!known || known.accountSid !== accountSid) return fail({ status: 404, code: 20404, message: `The requested resource /Calls/${m[2]}.json was not found` });
      return answer(200, this.callJson(known));
    }
    if (!m[2]) {
      if (!this.loseNextCreateAnswer) return this.createCall(accountSid, params, answer, fail);
      // The call is placed; the answer never arrives (a connection lost after the request was sent).
      this.loseNextCreateAnswer = false;
      return this.createCall(accountSid, params, () => (this.requests.push({ method: 'POST', path, params, status: 0 }), res.socket?.destroy()), fail);
    }
    const call = this.calls.get(decodeURIComponent(m[2]));
    if (!call || call.accountSid !== accountSid) return fail({ status: 404, code: 20404, message: `The requested resource /Calls/${m[2]}.json was not found` });
    if (!this.loseNextUpdateAnswer) return this.updateCall(call, params, answer, fail);
    this.loseNextUpdateAnswer = false;
    return this.updateCall(call, params, () => (this.requests.push({ method: 'POST', path, params, status: 0 }), res.socket?.destroy()), fail);
  }

  private authorized(req: IncomingMessage, accountSid: string): boolean {
    const h = req.headers.authorization ?? '';
    if (!h.startsWith('Basic ')) return false;
    const [user, pass] = Buffer.from(h.slice(6), 'base64').toString('utf8').split(':');
    return user === accountSid && this.o.accounts[accountSid] !== undefined && this.o.accounts[accountSid] === pass;
  }

  private createCall(accountSid: string, p: URLSearchParams, answer: (s: number, b: unknown) => void, fail: (e: SimError) => void): void {
    if (this.failNextCreate) {
      const e = this.failNextCreate;
      this.failNextCreate = undefined;
      return fail(e);
    }
    const to = p.get('To') ?? '';
    const from = p.get('From') ?? '';
    if (!E164.test(to)) return fail({ status: 400, code: 21211, message: `The 'To' number ${to} is not a valid phone number.` });
    if (!E164.test(from) || (this.o.ownedNumbers && !this.o.ownedNumbers.includes(from))) {
      return fail({ status: 400, code: 21210, message: `The source phone number provided, ${from}, is not yet verified for your account.` });
    }
    if (!p.get('Twiml') && !p.get('Url')) return fail({ status: 400, code: 21205, message: 'Url parameter is required.' });
    const call = new SimCall(`CA${randomBytes(16).toString('hex')}`, accountSid, 'outbound-api', from, to, p, this.o.callee?.(to) ?? {});
    this.calls.set(call.sid, call);
    answer(201, this.callJson(call));
    void this.runOutbound(call);
  }

  private updateCall(call: SimCall, p: URLSearchParams, answer: (s: number, b: unknown) => void, fail: (e: SimError) => void): void {
    if (this.failNextUpdate) {
      const e = this.failNextUpdate;
      this.failNextUpdate = undefined;
      return fail(e);
    }
    const status = p.get('Status');
    const twiml = p.get('Twiml');
    if (status === 'completed' || status === 'canceled') {
      if (!call.isFinal) {
        call.gen++;
        call.media?.hangup();
        this.complete(call, call.status === 'in-progress' || status === 'completed' ? 'completed' : 'canceled');
      }
    } else if (twiml) {
      if (call.isFinal) return fail({ status: 400, code: 21220, message: 'Call is not in-progress. Cannot redirect.' });
      // New instructions end the media stream (stop, then the socket closes) and run at once.
      const gen = ++call.gen;
      call.media?.hangup();
      void this.execute(call, twiml, gen);
    }
    answer(200, this.callJson(call));
  }

  private callJson(c: SimCall) {
    const now = new Date().toUTCString().replace('GMT', '+0000');
    return {
      sid: c.sid,
      account_sid: c.accountSid,
      to: c.to,
      from: c.from,
      status: c.status,
      direction: c.direction,
      api_version: '2010-04-01',
      date_created: now,
      date_updated: now,
      start_time: null,
      end_time: null,
      duration: null,
      price: null,
      price_unit: 'USD',
      answered_by: null,
      parent_call_sid: null,
      phone_number_sid: null,
      queue_time: '0',
      uri: `/2010-04-01/Accounts/${c.accountSid}/Calls/${c.sid}.json`,
      subresource_uris: { recordings: `/2010-04-01/Accounts/${c.accountSid}/Calls/${c.sid}/Recordings.json` },
    };
  }

  // ------------------------------------------------------------------ call progress

  private async runOutbound(call: SimCall): Promise<void> {
    const b = call.behaviour;
    await this.statusEvent(call, 'initiated', 'queued');
    await sleep(b.queueMs ?? 20);
    if (call.isFinal) return;
    call.status = 'ringing';
    await this.statusEvent(call, 'ringing', 'ringing');
    await sleep(b.ringMs ?? 100);
    if (call.isFinal) return;
    const outcome = b.outcome ?? 'answer';
    if (outcome !== 'answer') return this.complete(call, outcome);
    call.status = 'in-progress';
    call.answeredAtMs = Date.now();
    await this.statusEvent(call, 'answered', 'in-progress');
    const p = call.createParams;
    if (p.get('MachineDetection') && p.get('AsyncAmd') === 'true' && b.answeredBy !== null) {
      const url = p.get('AsyncAmdStatusCallback');
      setTimeout(() => {
        if (call.isFinal || !url) return;
        void this.post(call, 'amd', url, { CallSid: call.sid, AccountSid: call.accountSid, AnsweredBy: b.answeredBy ?? 'human', MachineDetectionDuration: String(b.amdDelayMs ?? 800) });
      }, b.amdDelayMs ?? 800);
    }
    await this.execute(call, p.get('Twiml') ?? '<Response/>', call.gen);
  }

  /** Runs a TwiML document for `call` until it ends or newer TwiML replaces it (`gen`). */
  private async execute(call: SimCall, xml: string, gen: number, token?: string): Promise<void> {
    call.twiml.push(xml);
    let doc: TwimlNode;
    try {
      doc = parseTwiml(xml);
    } catch {
      call.said.push('An application error has occurred.');
      return this.complete(call, 'failed');
    }
    for (const verb of doc.children) {
      if (call.gen !== gen || call.isFinal) return;
      switch (verb.name) {
        case 'Say':
          call.said.push(verb.text);
          await sleep(20);
          break;
        case 'Play':
          call.played.push(verb.text);
          await sleep(20);
          break;
        case 'Pause':
          await sleep(Number(verb.attrs.length ?? 1) * 1000 * (this.o.pauseScale ?? 0.01));
          break;
        case 'Hangup':
          return this.complete(call, 'completed');
        case 'Redirect': {
          const res = await this.post(call, 'redirect', verb.text, { ...this.callParams(call), CallStatus: 'in-progress' }, token);
          if (call.gen !== gen) return;
          return this.execute(call, res.body, gen, token);
        }
        case 'Connect': {
          const s = streamOf(verb);
          if (!s || call.behaviour.streamFails) break;
          const media = new MediaStreamCall({ url: s.url, callSid: call.sid, accountSid: call.accountSid, customParameters: s.parameters, link: call.behaviour.link, ticker: this.o.ticker });
          call.media = media;
          try {
            await media.connect();
          } catch {
            break;
          }
          call.resolveMedia(media);
          void Promise.resolve(call.behaviour.onMedia?.(media, call)).catch(() => {});
          await media.closed();
          break;
        }
        case 'Dial': {
          call.transferredTo = verb.children.find((c) => c.name === 'Number')?.text ?? verb.text;
          call.dialAttrs = verb.attrs;
          await sleep(call.behaviour.dialDurationMs ?? 300);
          if (call.gen !== gen || call.isFinal) return;
          if (verb.attrs.action) {
            const durationS = String(Math.round((call.behaviour.dialDurationMs ?? 300) / 1000));
            // Twilio names a recorded leg's recording in the action request (`record` on `<Dial>`).
            const recording: Record<string, string> = {};
            if (verb.attrs.record?.startsWith('record-from')) {
              const laml = this.o.flavor?.lamlRecordings === true;
              const rsid = laml ? randomUUID() : `RE${randomBytes(16).toString('hex')}`;
              this.recordings.record(rsid, call.behaviour, { channels: verb.attrs.record.endsWith('-dual') ? 2 : 1, format: 'wav' });
              Object.assign(recording, { RecordingUrl: `${this.baseUrl}${this.o.flavor?.pathPrefix ?? ''}/2010-04-01/Accounts/${call.accountSid}/Recordings/${rsid}`, ...(laml ? {} : { RecordingSid: rsid, RecordingDuration: durationS }) });
            }
            const res = await this.post(call, 'dial_action', verb.attrs.action, {
              ...this.callParams(call),
              DialCallStatus: call.behaviour.dialStatus ?? 'completed',
              DialCallSid: `CA${randomBytes(16).toString('hex')}`,
              DialCallDuration: durationS,
              ...recording,
            });
            if (call.gen !== gen) return;
            return this.execute(call, res.body, gen, token);
          }
          break;
        }
        default:
          break;
      }
    }
    if (call.gen === gen) this.complete(call, 'completed');
  }

  private complete(call: SimCall, status: SimCallStatus): void {
    if (call.isFinal) return;
    call.status = status;
    call.media?.hangup();
    const durationS = call.answeredAtMs ? Math.round((Date.now() - call.answeredAtMs) / 1000) : 0;
    void this.statusEvent(call, 'completed', status, { CallDuration: String(durationS) }).finally(() => call.resolveEnded(status));
    const p = call.createParams;
    const recUrl = p.get('RecordingStatusCallback');
    if (p.get('Record') === 'true' && recUrl && call.answeredAtMs) {
      const rsid = `RE${randomBytes(16).toString('hex')}`;
      void this.post(call, 'recording', recUrl, {
        AccountSid: call.accountSid,
        CallSid: call.sid,
        RecordingSid: rsid,
        RecordingUrl: `${this.baseUrl}/2010-04-01/Accounts/${call.accountSid}/Recordings/${rsid}`,
        RecordingStatus: 'completed',
        RecordingDuration: String(durationS),
        RecordingChannels: '1',
        RecordingSource: 'OutboundAPI',
      });
    }
  }

  private seqByCall = new Map<string, number>();

  private async statusEvent(call: SimCall, event: string, callStatus: string, extra: Record<string, string> = {}): Promise<void> {
    const p = call.createParams;
    const url = p.get('StatusCallback');
    const wanted = p.getAll('StatusCallbackEvent');
    if (!url || !(wanted.length ? wanted : ['completed']).includes(event)) return;
    const seq = this.seqByCall.get(call.sid) ?? 0;
    this.seqByCall.set(call.sid, seq + 1);
    if (call.behaviour.loseFinalStatus && ['completed', 'busy', 'no-answer', 'failed', 'canceled'].includes(callStatus)) {
      call.callbacks.push({ kind: 'status', url, params: { CallStatus: callStatus }, status: 0, body: 'lost', atMs: performance.now() });
      return;
    }
    await this.post(call, 'status', url, {
      ...this.callParams(call),
      CallStatus: callStatus,
      CallbackSource: 'call-progress-events',
      SequenceNumber: String(seq),
      Timestamp: new Date().toUTCString().replace('GMT', '+0000'),
      ...extra,
    });
  }

  private callParams(call: SimCall): Record<string, string> {
    return {
      CallSid: call.sid,
      AccountSid: call.accountSid,
      From: call.from,
      To: call.to,
      Called: call.to,
      Caller: call.from,
      ...(call.callerName !== undefined ? { CallerName: call.callerName } : {}),
      CallStatus: call.status,
      Direction: call.direction,
      ApiVersion: '2010-04-01',
    };
  }

  /** A signed form POST to our service (webhook or callback); the answer's body is returned. */
  private async post(call: SimCall, kind: SentCallback['kind'], url: string, params: Record<string, string>, token?: string): Promise<{ status: number; body: string }> {
    const authToken = token ?? this.o.flavor?.signingKeys?.[call.accountSid] ?? this.o.accounts[call.accountSid] ?? '';
    const headers: Record<string, string> = { 'content-type': 'application/x-www-form-urlencoded' };
    if (authToken) headers[this.o.flavor?.signatureHeader ?? 'x-twilio-signature'] = computeSignature(authToken, url, params);
    let status = 0;
    let body = '';
    const atMs = performance.now();
    try {
      const res = await fetch(url, { method: 'POST', headers, body: new URLSearchParams(params).toString(), signal: AbortSignal.timeout(10_000) });
      status = res.status;
      body = await res.text();
    } catch (err) {
      body = (err as Error).message;
    }
    call.callbacks.push({ kind, url, params, status, body, atMs });
    return { status, body };
  }
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
