/**
 * The call-control documents of the stream carrier simulator (stream-carrier.ts), run verb by verb,
 * and its signed requests to our service:
 *
 * - Plivo XML: `<Speak>`, `<Play>`, `<Wait>`, `<Redirect>`, `<Record recordSession>` and
 *   `<Record startOnDialAnswer>` (the next `<Dial>`'s conversation: its callback when that leg
 *   ends), `<Stream>` (extraHeaders -> the start frame), `<Dial><Number>` or `<Dial><User>` (a SIP
 *   endpoint: the hand-off's person; the action URL gets DialStatus), `<Hangup>`;
 * - NCCO: `talk`, `stream`, `input` (waits, then fetches the next NCCO from its eventUrl), `record`
 *   (the whole call, or, before a `connect` to a person or number, that conversation: its event
 *   once the call is over), `connect` to a `websocket` (`audio/l16;rate=8000|16000`, headers ->
 *   websocket:connected), a `phone` (transfer) or a person: an `app` user or a `sip` URI (portal
 *   hand-off), the leg's progress posted to the action's eventUrl;
 * - Exotel: `{"url": "wss://..."}` from the applet endpoint (no url: the applet fails).
 */
import { createHash, createHmac, randomBytes, randomUUID } from 'node:crypto';
import { computePlivoSignature } from '../../control-plane/telephony/carriers/plivo-signature.js';
import type { SimCallStatus } from './carrier.js';
import type { CarrierStreamCall, StreamWireName } from './stream-call.js';
import type { StreamSimAccount, StreamSimCall } from './stream-carrier.js';
import { parseTwiml } from './twiml.js';

export interface DocHost {
  readonly wire: StreamWireName;
  post(call: StreamSimCall, kind: string, url: string, body: Record<string, unknown>): Promise<{ status: number; answer: string }>;
  complete(call: StreamSimCall, status: SimCallStatus): void;
  openStream(call: StreamSimCall, url: string, params: Record<string, string>, rate?: 8000 | 16000): CarrierStreamCall;
  plivoParams(call: StreamSimCall): Record<string, string>;
  dialRecorded(call: StreamSimCall, startedAtMs: number): Promise<void>;
}

/** Pauses (`<Wait>`, `input` timeouts) run at this fraction of their length. */
const PAUSE_SCALE = 0.01;
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

export async function runDocument(host: DocHost, call: StreamSimCall, doc: string, gen: number): Promise<void> {
  call.docs.push(doc);
  try {
    if (host.wire === 'plivo') await runPlivo(host, call, doc, gen);
    else if (host.wire === 'vonage') await runNcco(host, call, JSON.parse(doc) as Array<Record<string, any>>, gen);
    else await runExotel(host, call, JSON.parse(doc) as { url?: string }, gen);
  } catch {
    call.said.push('An application error has occurred.');
    return host.complete(call, 'failed');
  }
  if (call.gen === gen) host.complete(call, 'completed');
}

async function stream(host: DocHost, call: StreamSimCall, url: string, params: Record<string, string>, rate?: 8000 | 16000): Promise<void> {
  const media = host.openStream(call, url, params, rate);
  try {
    await media.connect();
  } catch {
    return;
  }
  call.resolveMedia(media);
  await media.closed();
}

async function runPlivo(host: DocHost, call: StreamSimCall, xml: string, gen: number): Promise<void> {
  for (const verb of parseTwiml(xml).children) {
    if (call.gen !== gen || call.isFinal) return;
    switch (verb.name) {
      case 'Speak':
        call.said.push(verb.text);
        break;
      case 'Wait':
        await sleep(Number(verb.attrs.length ?? 1) * 1000 * PAUSE_SCALE);
        break;
      case 'Record':
        // startOnDialAnswer: the next <Dial>'s conversation, stereo unless asked for mono, mp3 unless wav.
        if (verb.attrs.startOnDialAnswer === 'true') call.dialRecording = { callbackUrl: verb.attrs.callbackUrl ?? '', channels: verb.attrs.recordChannelType === 'mono' ? 1 : 2, format: verb.attrs.fileFormat ?? 'mp3' };
        else {
          call.recording = true;
          call.recordingUrl = verb.attrs.callbackUrl ?? '';
        }
        break;
      case 'Redirect': {
        const res = await host.post(call, 'redirect', verb.text, host.plivoParams(call));
        if (call.gen === gen) return runPlivo(host, call, res.answer, gen);
        return;
      }
      case 'Stream': {
        const params: Record<string, string> = {};
        for (const pair of (verb.attrs.extraHeaders ?? '').split(',')) {
          const i = pair.indexOf('=');
          if (i > 0) params[pair.slice(0, i)] = pair.slice(i + 1);
        }
        await stream(host, call, verb.text.trim(), params);
        break;
      }
      case 'Dial': {
        const user = verb.children.find((c) => c.name === 'User')?.text;
        call.transferredTo = user ?? `+${verb.children.find((c) => c.name === 'Number')?.text ?? ''}`;
        const answeredAtMs = Date.now();
        await sleep(call.behaviour.dialDurationMs ?? 300);
        if (call.gen !== gen || call.isFinal) return;
        // The recording callback runs on its own (the file is ready when it is), the action goes on.
        const recorded = host.dialRecorded(call, answeredAtMs);
        if ((call.behaviour.dialRecordingDelayMs ?? 100) === 0) await recorded;
        if (verb.attrs.action) {
          const res = await host.post(call, 'dial_action', verb.attrs.action, { ...host.plivoParams(call), DialStatus: call.behaviour.dialStatus ?? 'completed', DialAction: 'hangup', DialALegUUID: call.sid, DialBLegUUID: randomUUID() });
          if (call.gen === gen) return runPlivo(host, call, res.answer, gen);
        }
        return;
      }
      case 'Hangup':
        return host.complete(call, 'completed');
      default:
        break;
    }
  }
}

async function runNcco(host: DocHost, call: StreamSimCall, ncco: Array<Record<string, any>>, gen: number): Promise<void> {
  if (!Array.isArray(ncco)) throw new Error('NCCO: not an array');
  for (const a of ncco) {
    if (call.gen !== gen || call.isFinal) return;
    switch (a.action) {
      case 'talk':
        call.said.push(String(a.text));
        break;
      case 'record':
        // Before a connect to a person or number: that conversation's recording (stereo when split).
        if (ncco.some((b) => b.action === 'connect' && ['phone', 'app', 'sip'].includes(b.endpoint?.[0]?.type))) {
          call.dialRecording = { callbackUrl: a.eventUrl?.[0] ?? '', channels: a.split === 'conversation' ? 2 : 1, format: a.format ?? 'mp3' };
        } else {
          call.recording = true;
          call.recordingUrl = a.eventUrl?.[0] ?? '';
        }
        break;
      case 'input': {
        await sleep(Number(a.dtmf?.timeOut ?? 3) * 1000 * PAUSE_SCALE);
        if (call.gen !== gen) return;
        const res = await host.post(call, 'input', a.eventUrl[0], { uuid: call.sid, from: call.from.slice(1), to: call.to.slice(1), dtmf: { digits: '', timed_out: true } });
        if (call.gen === gen) return runNcco(host, call, JSON.parse(res.answer), gen);
        return;
      }
      case 'connect': {
        const ep = a.endpoint?.[0] ?? {};
        if (ep.type === 'websocket') {
          // Vonage offers these two (docs: "audio/l16;rate=16000 or audio/l16;rate=8000").
          const m = /^audio\/l16;rate=(8000|16000)$/.exec(String(ep['content-type']));
          if (!m) throw new Error('NCCO: unexpected content-type');
          await stream(host, call, ep.uri, ep.headers ?? {}, Number(m[1]) as 8000 | 16000);
        } else if (ep.type === 'phone' || ep.type === 'app' || ep.type === 'sip') {
          call.transferredTo = ep.type === 'phone' ? `+${ep.number}` : ep.type === 'app' ? `app:${ep.user}` : String(ep.uri);
          const ev = a.eventUrl?.[0] as string | undefined;
          if (ev) await host.post(call, 'transfer_leg', ev, { uuid: randomUUID(), status: 'answered' });
          const answeredAtMs = Date.now();
          await sleep(call.behaviour.dialDurationMs ?? 300);
          if (ev && call.gen === gen) await host.post(call, 'transfer_leg', ev, { uuid: randomUUID(), status: call.behaviour.dialStatus ?? 'completed', duration: '1' });
          // Vonage posts the recording once the call has ended (this NCCO is done: the call ends).
          void host.dialRecorded(call, answeredAtMs);
        }
        break;
      }
      default:
        break;
    }
  }
}

async function runExotel(host: DocHost, call: StreamSimCall, doc: { url?: string }, gen: number): Promise<void> {
  // No URL: the Voicebot applet fails and the flow ends the call.
  if (!doc.url || call.gen !== gen) throw new Error('applet: no stream url');
  const u = new URL(doc.url);
  const params = Object.fromEntries(u.searchParams);
  await stream(host, call, doc.url, params);
}

/** A request to our service signed (or, `forge`, mis-signed) the way `wire`'s carrier signs. */
export async function signedPost(wire: StreamWireName, account: StreamSimAccount, url: string, body: Record<string, unknown>, forge: boolean, method: 'POST' | 'GET' = 'POST'): Promise<{ status: number; answer: string }> {
  const headers: Record<string, string> = {};
  let payload: string;
  const secret = forge ? `${account.secret}-forged` : account.secret;
  if (wire === 'plivo') {
    const params = Object.fromEntries(Object.entries(body).filter(([, v]) => v !== undefined).map(([k, v]) => [k, String(v)]));
    payload = new URLSearchParams(params).toString();
    headers['content-type'] = 'application/x-www-form-urlencoded';
    const nonce = randomBytes(10).toString('hex');
    headers['x-plivo-signature-v3-nonce'] = nonce;
    headers['x-plivo-signature-v3'] = computePlivoSignature(secret, 'POST', url, params, nonce);
  } else if (wire === 'vonage') {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const head = b64({ alg: 'HS256', typ: 'JWT' });
    const claims = b64({ iat: Math.floor(Date.now() / 1000), jti: randomUUID(), iss: 'Vonage', payload_hash: createHash('sha256').update(payload).digest('hex'), api_key: account.id, application_id: account.key });
    headers.authorization = `Bearer ${head}.${claims}.${createHmac('sha256', secret).update(`${head}.${claims}`).digest('base64url')}`;
  } else {
    payload = JSON.stringify(body);
    headers['content-type'] = 'application/json';
    headers.authorization = `Basic ${Buffer.from(`${account.key}:${secret}`).toString('base64')}`;
    // Status callbacks are authenticated by the sig we put in their URL: a forger does not have it.
    if (forge) url = url.replace(/([?&]sig=)[^&]+/, '$1forged');
  }
  if (method === 'GET') {
    // Exotel's applet fetches its dynamic URL with the call's details in the query.
    const u = new URL(url);
    for (const [k, v] of Object.entries(body)) if (v !== undefined) u.searchParams.set(k, String(v));
    url = u.toString();
    delete headers['content-type'];
  }
  try {
    const res = await fetch(url, { method, headers, body: method === 'GET' ? undefined : payload, signal: AbortSignal.timeout(10_000) });
    return { status: res.status, answer: await res.text() };
  } catch (err) {
    return { status: 0, answer: (err as Error).message };
  }
}
