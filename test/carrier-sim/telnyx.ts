/**
 * A Telnyx Call Control simulator (the same role as carrier.ts for Twilio, same call scenarios):
 *
 * - REST (Bearer API key, JSON): `POST /v2/calls` (dial: `connection_id`, `to`, `from`,
 *   `webhook_url`, `stream_url`, `answering_machine_detection`, `record`, `client_state`) answering
 *   `{data: {call_control_id, ...}}`; `POST /v2/calls/{id}/actions/{answer|hangup|transfer|reject|
 *   record_start}`; errors as `{errors: [{code, title, detail}]}`.
 * - Events: `{data: {event_type, id, occurred_at, payload}, meta}` posted to the call's webhook URL,
 *   signed with Ed25519 (`telnyx-signature-ed25519` over `timestamp|body`, `telnyx-timestamp`)
 *   by a key pair of its own (`publicKey`: base64 raw 32 bytes, as the portal shows it).
 * - Answered calls stream to `stream_url` in the Telnyx dialect (`MediaStreamCall`, same link
 *   model: jitter, reorder, loss); the stream ending from our side posts `streaming.stopped`.
 * - Inbound: `placeInboundCall` posts `call.initiated` (incoming) to the connection's webhook and
 *   waits for our `answer` (or `reject`).
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { generateKeyPairSync, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { signTelnyx } from '../../control-plane/telephony/carriers/telnyx-signature.js';
import type { CalleeBehaviour, SentCallback } from './carrier.js';
import { MediaStreamCall } from './media-call.js';
import type { Ticker } from './ticker.js';

export interface TelnyxSimOptions {
  /** API keys accepted (Bearer). */
  apiKeys: string[];
  callee?: (to: string) => CalleeBehaviour;
  ticker?: Ticker;
  /** Codec of the streams (PCMU default). */
  codec?: 'pcmu' | 'pcma';
}

export type TelnyxCallState = 'initiated' | 'ringing' | 'answered' | 'hangup';

export class TelnyxCall {
  state: TelnyxCallState = 'initiated';
  media?: MediaStreamCall;
  hangupCause = '';
  transferredTo?: string;
  recorded = false;
  answeredAtMs = 0;
  startedAt = new Date();
  readonly callbacks: SentCallback[] = [];
  readonly actions: Array<{ name: string; body: Record<string, unknown> }> = [];
  webhookUrl: string;
  readonly ended: Promise<string>;
  readonly mediaReady: Promise<MediaStreamCall>;
  resolveEnded!: (cause: string) => void;
  resolveMedia!: (m: MediaStreamCall) => void;

  constructor(
    readonly callControlId: string,
    readonly direction: 'incoming' | 'outgoing',
    readonly from: string,
    readonly to: string,
    readonly dial: Record<string, unknown>,
    readonly behaviour: CalleeBehaviour,
  ) {
    this.webhookUrl = typeof dial.webhook_url === 'string' ? dial.webhook_url : '';
    this.ended = new Promise((r) => (this.resolveEnded = r));
    this.mediaReady = new Promise((r) => (this.resolveMedia = r));
  }

  get isOver(): boolean {
    return this.state === 'hangup';
  }
}

const E164 = /^\+[1-9]\d{6,14}$/;

export class TelnyxSim {
  readonly calls = new Map<string, TelnyxCall>();
  readonly requests: Array<{ path: string; body: Record<string, unknown>; status: number }> = [];
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

  /** An inbound call: `call.initiated` to the connection's webhook; the call then waits for `answer`. */
  async placeInboundCall(o: { webhookUrl: string; from: string; to: string; connectionId: string; behaviour?: CalleeBehaviour; forge?: boolean }): Promise<TelnyxCall> {
    const call = new TelnyxCall(`v3:${randomBytes(18).toString('base64url')}`, 'incoming', o.from, o.to, { webhook_url: o.webhookUrl, connection_id: o.connectionId }, o.behaviour ?? {});
    this.calls.set(call.callControlId, call);
    call.state = 'ringing';
    await this.event(call, 'call.initiated', { direction: 'incoming', state: 'parked' }, o.forge);
    return call;
  }

  /** Posts any event of `call` (tests: forged or replayed events). */
  event(call: TelnyxCall, type: string, extra: Record<string, unknown> = {}, forge = false, url = call.webhookUrl): Promise<{ status: number; body: string }> {
    const payload = {
      call_control_id: call.callControlId,
      call_leg_id: randomUUID(),
      call_session_id: randomUUID(),
      connection_id: String(call.dial.connection_id ?? ''),
      client_state: typeof call.dial.client_state === 'string' ? call.dial.client_state : undefined,
      from: call.from,
      to: call.to,
      direction: call.direction,
      ...extra,
    };
    const body = JSON.stringify({ data: { record_type: 'event', event_type: type, id: randomUUID(), occurred_at: new Date().toISOString(), payload }, meta: { attempt: 1, delivered_to: url } });
    return this.post(call, type, url, body, forge);
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
    const path = new URL(req.url ?? '/', 'http://sim').pathname;
    const answer = (status: number, out: unknown) => {
      this.requests.push({ path, body, status });
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(out));
    };
    const fail = (status: number, code: string, detail: string) => answer(status, { errors: [{ code, title: detail, detail }] });
    const auth = req.headers.authorization ?? '';
    if (!auth.startsWith('Bearer ') || !this.o.apiKeys.includes(auth.slice(7))) return fail(401, '10009', 'Authentication failed');
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
    call.actions.push({ name: m[2]!, body });
    answer(200, { data: { result: 'ok' } });
    void this.act(call, m[2]!, body);
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
        Object.assign(call.dial, { client_state: body.client_state, stream_url: body.stream_url });
        return this.answered(call);
      case 'reject':
        return this.hangup(call, 'call_rejected');
      case 'hangup':
        return this.hangup(call, 'normal_clearing');
      case 'record_start':
        call.recorded = true;
        return;
      case 'transfer': {
        call.transferredTo = String(body.to ?? '');
        if (typeof body.webhook_url === 'string') call.webhookUrl = body.webhook_url;
        // The AI leg's stream stops as the call is bridged to the new party.
        call.media?.stopStream();
        await this.event(call, 'call.bridged', { to: call.transferredTo });
        await sleep(call.behaviour.dialDurationMs ?? 300);
        return this.hangup(call, 'normal_clearing');
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
    if (typeof url !== 'string') return;
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

  private async hangup(call: TelnyxCall, cause: string): Promise<void> {
    if (call.isOver) return;
    call.state = 'hangup';
    call.hangupCause = cause;
    call.media?.hangup();
    await this.event(call, 'call.hangup', { hangup_cause: cause, hangup_source: 'callee', start_time: call.startedAt.toISOString(), end_time: new Date().toISOString() });
    if (call.recorded && call.answeredAtMs) {
      const id = randomUUID();
      await this.event(call, 'call.recording.saved', { recording_id: id, recording_urls: { mp3: `${this.baseUrl}/recordings/${id}.mp3` }, channels: 'single' });
    }
    call.resolveEnded(cause);
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
