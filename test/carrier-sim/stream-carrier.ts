/**
 * Plivo, Vonage and Exotel, simulated for tests (the Twilio one is carrier.ts, same model): each
 * carrier's REST API for dialing, hanging up and transferring, its call progress callbacks signed
 * its way (Plivo `X-Plivo-Signature-V3`, Vonage a signed JWT with the body's hash, Exotel our `sig`
 * in the callback URL), AMD verdicts where the carrier has them, recordings, its call-control
 * document run verb by verb (Plivo XML, NCCO, Exotel's stream URL), and the media stream dialled
 * back into the engine on the carrier's wire (`CarrierStreamCall`, stream-call.ts) through an
 * impaired link. Inbound: `placeInboundCall` posts the voice webhook and runs what it answers.
 */
import { randomBytes, randomUUID } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { importSPKI, jwtVerify } from 'jose';
import type { CalleeBehaviour, SimCallStatus } from './carrier.js';
import { CarrierStreamCall, type StreamWireName } from './stream-call.js';
import { runDocument, signedPost, type DocHost } from './stream-carrier-docs.js';
import { SimRecordings } from './recordings.js';
import type { Ticker } from './ticker.js';

export interface StreamSimAccount {
  /** Plivo auth id / Vonage API key / Exotel account sid. */
  id: string;
  /** Plivo auth token / Vonage signature secret / Exotel API token. */
  secret: string;
  /** Exotel API key; Vonage application id. */
  key?: string;
  /** Vonage: the application's public key (PEM), to check our RS256 JWTs. */
  publicKey?: string;
}

export interface StreamCarrierSimOptions {
  wire: StreamWireName;
  account: StreamSimAccount;
  callee?: (to: string) => CalleeBehaviour;
  ticker?: Ticker;
}

export interface StreamSentCallback {
  kind: string;
  url: string;
  body: Record<string, unknown>;
  status: number;
  answer: string;
}

const FINAL: ReadonlySet<string> = new Set(['completed', 'busy', 'no-answer', 'failed', 'canceled']);

export class StreamSimCall {
  status: SimCallStatus = 'queued';
  media?: CarrierStreamCall;
  readonly said: string[] = [];
  readonly docs: string[] = [];
  readonly callbacks: StreamSentCallback[] = [];
  transferredTo?: string;
  recording = false;
  recordingUrl = '';
  /**
   * A recording of the dialed leg asked for in the document (Plivo `<Record startOnDialAnswer>`
   * before a `<Dial>`, a Vonage `record` before a `connect` to a person or number): where it is
   * announced, and what was asked (channels, format). Made when that leg ends.
   */
  dialRecording?: { callbackUrl: string; channels: 1 | 2; format: string };
  answeredAtMs = 0;
  gen = 0;
  /** Plivo: the request id dial answered with (the CallUUID is `sid`). */
  requestUuid = '';
  readonly ended: Promise<SimCallStatus>;
  readonly mediaReady: Promise<CarrierStreamCall>;
  resolveEnded!: (s: SimCallStatus) => void;
  resolveMedia!: (m: CarrierStreamCall) => void;

  constructor(
    readonly sid: string,
    readonly direction: 'inbound' | 'outbound',
    readonly from: string,
    readonly to: string,
    readonly request: Record<string, unknown>,
    readonly behaviour: CalleeBehaviour,
  ) {
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.mediaReady = new Promise((r) => (this.resolveMedia = r));
  }

  get isFinal(): boolean {
    return FINAL.has(this.status);
  }
}

export class StreamCarrierSim implements DocHost {
  readonly calls = new Map<string, StreamSimCall>();
  readonly requests: Array<{ method: string; path: string; status: number; body: unknown }> = [];
  /** Dialed legs' recordings (Plivo `/v1/Account/{id}/Recording/{rid}.wav`, Vonage `/v1/files/{uuid}`), behind the carrier's auth. */
  readonly recordings = new SimRecordings();
  failNextCreate?: { status: number; body: unknown };
  private server?: Server;
  private baseUrl = '';

  constructor(readonly o: StreamCarrierSimOptions) {}

  get url(): string {
    return this.baseUrl;
  }

  get wire(): StreamWireName {
    return this.o.wire;
  }

  async start(): Promise<string> {
    const server = createServer((req, res) => void this.receive(req, res).catch(() => res.writeHead(500).end()));
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

  async waitForCall(pred: (c: StreamSimCall) => boolean, timeoutMs = 5000): Promise<StreamSimCall> {
    const end = Date.now() + timeoutMs;
    for (;;) {
      const c = [...this.calls.values()].reverse().find(pred);
      if (c) return c;
      if (Date.now() > end) throw new Error('stream carrier sim: no such call in time');
      await new Promise((r) => setTimeout(r, 10));
    }
  }

  /** An inbound call: the voice webhook (signed unless `unsigned`), then the document it answers. */
  async placeInboundCall(o: { webhookUrl: string; from: string; to: string; behaviour?: CalleeBehaviour; forge?: boolean }): Promise<StreamSimCall> {
    const sid = this.o.wire === 'exotel' ? randomBytes(16).toString('hex') : randomUUID();
    const call = new StreamSimCall(sid, 'inbound', o.from, o.to, {}, o.behaviour ?? {});
    this.calls.set(sid, call);
    call.status = 'ringing';
    const body = this.o.wire === 'plivo' ? { CallUUID: sid, From: o.from.slice(1), To: o.to.slice(1), Direction: 'inbound', CallStatus: 'ringing', Event: 'StartApp' } : this.o.wire === 'vonage' ? { uuid: sid, conversation_uuid: `CON-${randomUUID()}`, from: o.from.slice(1), to: o.to.slice(1) } : { CallSid: sid, CallFrom: o.from, CallTo: o.to, Direction: 'incoming' };
    const res = await this.post(call, 'webhook', o.webhookUrl, body, o.forge);
    if (res.status !== 200) {
      this.complete(call, 'failed');
      return call;
    }
    call.status = 'in-progress';
    call.answeredAtMs = Date.now();
    void runDocument(this, call, res.answer, call.gen);
    return call;
  }

  // ------------------------------------------------------------------ REST

  private async receive(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString('utf8');
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const method = req.method ?? '';
    let body: Record<string, unknown> = {};
    if (/json/.test(req.headers['content-type'] ?? '')) body = text ? (JSON.parse(text) as Record<string, unknown>) : {};
    else body = Object.fromEntries(new URLSearchParams(text));
    const answer = (status: number, out?: unknown) => {
      this.requests.push({ method, path, status, body });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(out === undefined ? '' : JSON.stringify(out));
    };
    if (!(await this.authorized(req))) return answer(401, { error: 'authentication failed' });
    if (this.failNextCreate && method === 'POST') {
      const f = this.failNextCreate;
      this.failNextCreate = undefined;
      return answer(f.status, f.body);
    }
    const w = this.o.wire;
    const id = encodeURIComponent(this.o.account.id);
    let m: RegExpExecArray | null;
    const rec = method === 'GET' ? (w === 'plivo' ? new RegExp(`^/v1/Account/${id}/Recording/([0-9a-f-]{36})\\.(wav|mp3)$`) : /^\/v1\/files\/([0-9a-f-]{36})$/).exec(path) : null;
    if (rec) {
      const media = this.recordings.take(rec[1]!);
      if (!media) return answer(404, { error: 'not found' });
      this.requests.push({ method, path, status: 200, body: {} });
      res.writeHead(200, { 'content-type': rec[2] === 'mp3' ? 'audio/mpeg' : 'audio/wav', 'content-length': String(media.byteLength) });
      return void res.end(media);
    }
    if (w === 'plivo' && method === 'POST' && path === `/v1/Account/${id}/Call/`) return this.dialPlivo(body, answer);
    if (w === 'plivo' && (m = /^\/v1\/Account\/[^/]+\/(Call|Request)\/([^/]+)\/$/.exec(path))) {
      const call = [...this.calls.values()].find((c) => (m![1] === 'Call' ? c.sid === m![2] && c.status === 'in-progress' : c.requestUuid === m![2]));
      if (!call) return answer(404, { error: 'not found' });
      if (method === 'DELETE') {
        this.hangupByApi(call);
        return answer(204);
      }
      if (method === 'POST' && typeof body.aleg_url === 'string') {
        answer(202, { message: 'call transferred', api_id: randomUUID() });
        return void this.redirect(call, String(body.aleg_url));
      }
    }
    if (w === 'vonage' && method === 'POST' && path === '/v1/calls') return this.dialVonage(body, answer);
    if (w === 'vonage' && method === 'PUT' && (m = /^\/v1\/calls\/([^/]+)$/.exec(path))) {
      const call = this.calls.get(m[1]!);
      if (!call || call.isFinal) return answer(404, { title: 'Not Found', detail: 'call not found' });
      if (body.action === 'hangup') {
        this.hangupByApi(call);
        return answer(204);
      }
      if (body.action === 'transfer') {
        answer(204);
        const gen = ++call.gen;
        call.media?.hangup();
        return void runDocument(this, call, JSON.stringify((body.destination as { ncco: unknown }).ncco), gen);
      }
    }
    if (w === 'exotel' && method === 'POST' && path === `/v1/Accounts/${id}/Calls/connect.json`) return this.dialExotel(body, answer);
    return answer(404, { error: 'not found' });
  }

  private async authorized(req: IncomingMessage): Promise<boolean> {
    const h = req.headers.authorization ?? '';
    const a = this.o.account;
    if (this.o.wire === 'vonage') {
      if (!h.startsWith('Bearer ') || !a.publicKey) return false;
      try {
        const { payload } = await jwtVerify(h.slice(7), await importSPKI(a.publicKey, 'RS256'), { algorithms: ['RS256'] });
        return payload.application_id === a.key;
      } catch {
        return false;
      }
    }
    const [user, pass] = Buffer.from(h.replace(/^Basic /, ''), 'base64').toString('utf8').split(':');
    return h.startsWith('Basic ') && (this.o.wire === 'exotel' ? user === a.key : user === a.id) && pass === a.secret;
  }

  private dialPlivo(b: Record<string, unknown>, answer: (s: number, b?: unknown) => void): void {
    const call = new StreamSimCall(randomUUID(), 'outbound', `+${String(b.from)}`, `+${String(b.to)}`, b, this.o.callee?.(`+${String(b.to)}`) ?? {});
    call.requestUuid = randomUUID();
    this.calls.set(call.sid, call);
    answer(201, { api_id: randomUUID(), message: 'call fired', request_uuid: call.requestUuid });
    void this.runOutbound(call, async () => {
      if (b.machine_detection && call.behaviour.answeredBy !== null) this.later(call, call.behaviour.amdDelayMs ?? 800, () => this.post(call, 'amd', String(b.machine_detection_url), { CallUUID: call.sid, RequestUUID: call.requestUuid, Machine: call.behaviour.answeredBy?.startsWith('machine') ? 'true' : 'false' }));
      const res = await this.post(call, 'answer', String(b.answer_url), { ...this.plivoParams(call), Event: 'StartApp' });
      return res.answer;
    });
  }

  private dialVonage(b: Record<string, unknown>, answer: (s: number, b?: unknown) => void): void {
    const to = `+${String((b.to as Array<{ number: string }>)[0]?.number ?? '')}`;
    const call = new StreamSimCall(randomUUID(), 'outbound', `+${String((b.from as { number: string }).number)}`, to, b, this.o.callee?.(to) ?? {});
    this.calls.set(call.sid, call);
    answer(201, { uuid: call.sid, status: 'started', direction: 'outbound', conversation_uuid: `CON-${randomUUID()}` });
    void this.runOutbound(call, async () => {
      const amd = b.advanced_machine_detection as { mode?: string } | undefined;
      if (amd && call.behaviour.answeredBy !== null) {
        const by = call.behaviour.answeredBy ?? 'human';
        this.later(call, call.behaviour.amdDelayMs ?? 800, () => this.event(call, by.startsWith('machine') ? { status: 'machine', sub_state: by === 'machine_end_beep' ? 'beep_start' : undefined } : { status: 'human' }));
      }
      return JSON.stringify(b.ncco);
    });
  }

  private dialExotel(b: Record<string, unknown>, answer: (s: number, b?: unknown) => void): void {
    const call = new StreamSimCall(randomBytes(16).toString('hex'), 'outbound', String(b.CallerId), String(b.From), b, this.o.callee?.(String(b.From)) ?? {});
    this.calls.set(call.sid, call);
    answer(200, { Call: { Sid: call.sid, Status: 'in-progress', From: b.From, To: b.CallerId } });
    call.recording = b.Record === 'true';
    void this.runOutbound(call, async () => JSON.stringify({ url: String(b.StreamUrl) }));
  }

  /** Ringing, the callee's outcome, then the answered call runs `doc()`'s document. */
  private async runOutbound(call: StreamSimCall, doc: () => Promise<string>): Promise<void> {
    const b = call.behaviour;
    await sleep(20);
    call.status = 'ringing';
    await this.progress(call, 'ringing');
    await sleep(b.ringMs ?? 100);
    if (call.isFinal) return;
    const outcome = b.outcome ?? 'answer';
    if (outcome !== 'answer') return this.complete(call, outcome);
    call.status = 'in-progress';
    call.answeredAtMs = Date.now();
    await this.progress(call, 'answered');
    await runDocument(this, call, await doc(), call.gen);
  }

  private async redirect(call: StreamSimCall, url: string): Promise<void> {
    const gen = ++call.gen;
    call.media?.hangup();
    const res = await this.post(call, 'transfer', url, { ...this.plivoParams(call), Event: 'Redirect' });
    if (call.gen === gen) await runDocument(this, call, res.answer, gen);
  }

  private hangupByApi(call: StreamSimCall): void {
    call.gen++;
    call.media?.hangup();
    this.complete(call, call.status === 'in-progress' ? 'completed' : 'canceled');
  }

  // ------------------------------------------------------------------ call progress

  later(call: StreamSimCall, ms: number, fn: () => unknown): void {
    setTimeout(() => {
      if (!call.isFinal) void fn();
    }, ms);
  }

  /** A progress callback of an outbound call (Plivo ring_url, Vonage events, Exotel answered). */
  private async progress(call: StreamSimCall, what: 'ringing' | 'answered'): Promise<void> {
    const r = call.request;
    if (this.o.wire === 'plivo' && what === 'ringing') await this.post(call, 'status', String(r.ring_url), { ...this.plivoParams(call), CallStatus: 'ringing', Event: 'Ring' });
    if (this.o.wire === 'vonage') await this.event(call, { status: what });
    if (this.o.wire === 'exotel' && what === 'answered') await this.post(call, 'status', String(r.StatusCallback), { CallSid: call.sid, EventType: 'answered', Status: 'in-progress', CustomField: r.CustomField });
  }

  async event(call: StreamSimCall, body: Record<string, unknown>): Promise<void> {
    const url = ((call.request.event_url as string[] | undefined) ?? [])[0];
    if (url) await this.post(call, String(body.status), url, { uuid: call.sid, ...body, timestamp: new Date().toISOString() });
  }

  /** The call ends with `status`: the final callback (and the recording's, when one was made). */
  complete(call: StreamSimCall, status: SimCallStatus): void {
    if (call.isFinal) return;
    call.status = status;
    call.media?.hangup();
    const durationS = call.answeredAtMs ? Math.round((Date.now() - call.answeredAtMs) / 1000) : 0;
    const r = call.request;
    const recordingUrl = call.recording && call.answeredAtMs ? `${this.baseUrl}/recordings/${randomUUID()}.mp3` : '';
    const done = (p: Promise<unknown>) => void p.finally(() => call.resolveEnded(status));
    if (this.o.wire === 'plivo') {
      const plivoStatus = status === 'no-answer' ? 'timeout' : status === 'canceled' ? 'cancel' : status;
      if (recordingUrl && call.recordingUrl) void this.post(call, 'recording', call.recordingUrl, { CallUUID: call.sid, RecordUrl: recordingUrl, RecordingID: randomUUID(), RecordingDuration: String(durationS) });
      done(r.hangup_url ? this.post(call, 'status', String(r.hangup_url), { ...this.plivoParams(call), CallStatus: plivoStatus, Duration: String(durationS), HangupCause: 'NORMAL_CLEARING' }) : Promise.resolve());
    } else if (this.o.wire === 'vonage') {
      if (recordingUrl && call.recordingUrl) void this.post(call, 'recording', call.recordingUrl, { recording_url: recordingUrl, recording_uuid: randomUUID(), uuid: call.sid });
      done(this.event(call, { status: status === 'no-answer' ? 'timeout' : status === 'canceled' ? 'cancelled' : status, duration: String(durationS) }));
    } else {
      done(r.StatusCallback ? this.post(call, 'status', String(r.StatusCallback), { CallSid: call.sid, EventType: 'terminal', Status: status, ConversationDuration: durationS, RecordingUrl: recordingUrl || undefined, CustomField: r.CustomField }) : Promise.resolve());
    }
  }

  /**
   * The dialed leg ended: its recording is stored as asked and announced the carrier's way (Plivo's
   * `<Record>` callback form, Vonage's `record` event), `dialRecordingDelayMs` later (0: now, so
   * Plivo's comes before the leg's end is reported, as a file that was ready first).
   */
  async dialRecorded(call: StreamSimCall, startedAtMs: number): Promise<void> {
    const asked = call.dialRecording;
    if (!asked) return;
    call.dialRecording = undefined;
    const delayMs = call.behaviour.dialRecordingDelayMs ?? 100;
    if (delayMs > 0) await sleep(delayMs);
    const rid = randomUUID();
    this.recordings.record(rid, call.behaviour, asked);
    const durationMs = Date.now() - startedAtMs;
    if (this.o.wire === 'plivo') {
      const url = `${this.baseUrl}/v1/Account/${encodeURIComponent(this.o.account.id)}/Recording/${rid}.${asked.format}`;
      await this.post(call, 'dial_recording', asked.callbackUrl, { CallUUID: call.sid, RecordUrl: url, RecordingID: rid, RecordingDuration: String(Math.round(durationMs / 1000)), RecordingDurationMs: String(durationMs), RecordingStartMs: String(startedAtMs), RecordingEndMs: String(startedAtMs + durationMs) });
    } else {
      const end = new Date();
      await this.post(call, 'dial_recording', asked.callbackUrl, { start_time: new Date(startedAtMs).toISOString(), recording_url: `${this.baseUrl}/v1/files/${rid}`, size: 1, recording_uuid: randomUUID(), end_time: end.toISOString(), conversation_uuid: `CON-${randomUUID()}`, timestamp: end.toISOString() });
    }
  }

  plivoParams(call: StreamSimCall): Record<string, string> {
    return { CallUUID: call.sid, RequestUUID: call.requestUuid, From: call.from.slice(1), To: call.to.slice(1), Direction: call.direction, CallStatus: call.status };
  }

  /** A callback or webhook to our service, signed the carrier's way (`forge`: with the wrong key). */
  async post(call: StreamSimCall, kind: string, url: string, body: Record<string, unknown>, forge = false): Promise<{ status: number; answer: string }> {
    const res = await signedPost(this.o.wire, this.o.account, url, body, forge, this.o.wire === 'exotel' && kind === 'webhook' ? 'GET' : 'POST');
    call.callbacks.push({ kind, url, body, ...res });
    return res;
  }

  openStream(call: StreamSimCall, url: string, params: Record<string, string>, rate?: 8000 | 16000): CarrierStreamCall {
    const media = new CarrierStreamCall({ wire: this.o.wire, url, callId: call.sid, params, rate, link: call.behaviour.link, ticker: this.o.ticker });
    call.media = media;
    return media;
  }
}

export function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}
