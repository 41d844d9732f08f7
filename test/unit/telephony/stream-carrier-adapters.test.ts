/**
 * The Plivo, Vonage and Exotel adapters without a network: their call-control documents, how their
 * callbacks map onto our events (status vocabulary, AMD verdicts, recordings, transfer legs),
 * Plivo's answer documents on the events route, webhook verification (and its off switch), and
 * outbound detection from account ids.
 */
import { createHash, createHmac, randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig, type Config } from '../../../shared/config.js';
import { createExotelAdapter, exotelCallbackSig } from '../../../control-plane/telephony/carriers/exotel.js';
import { createPlivoAdapter } from '../../../control-plane/telephony/carriers/plivo.js';
import { computePlivoSignature } from '../../../control-plane/telephony/carriers/plivo-signature.js';
import { createVonageAdapter } from '../../../control-plane/telephony/carriers/vonage.js';
import type { CarrierAccount, WebhookRequest } from '../../../control-plane/telephony/carriers/types.js';
import { parseTwiml } from '../../carrier-sim/twiml.js';

const config = (env: Record<string, string> = {}): Config => loadConfig({ ...process.env, ...env } as NodeJS.ProcessEnv);
const cfg = config();
const hook = (url: string, params: Record<string, string>, headers: Record<string, string> = {}, json?: unknown): WebhookRequest => ({
  url,
  headers: new Headers(headers),
  rawBody: json === undefined ? new URLSearchParams(params).toString() : JSON.stringify(json),
  params,
  json,
});
const PARAMS = { session_id: 's-1', agent_id: 'a-1', call_id: 'c-1' };

describe('Plivo adapter', () => {
  const plivo = createPlivoAdapter(() => cfg);
  const account: CarrierAccount = { carrier: 'plivo', accountSid: 'MAXXXXXXXXXXXXXXXXXX', authToken: 'tok', extra: {} };

  it('connects with a bidirectional stream carrying the session twice, then hangs up', () => {
    const doc = parseTwiml(plivo.documents.connect('wss://node/api/v1/voice/ws/plivo/CU1', PARAMS));
    expect(doc.children.map((c) => c.name)).toEqual(['Stream', 'Hangup']);
    const s = doc.children[0]!;
    expect(s.attrs).toMatchObject({ bidirectional: 'true', keepCallAlive: 'true', contentType: 'audio/x-mulaw;rate=8000', extraHeaders: 'session_id=s-1,agent_id=a-1,call_id=c-1' });
    expect(s.text).toBe('wss://node/api/v1/voice/ws/plivo/CU1?session_id=s-1&agent_id=a-1&call_id=c-1');
  });

  it('answers its answer_url with the connect XML (plus recording), and a transfer URL with <Dial>', () => {
    const base = 'https://cp/api/v1/telephony/calls/c-1/events/plivo';
    const u = new URL(base);
    u.searchParams.set('doc', 'connect');
    u.searchParams.set('stream', 'wss://node/api/v1/voice/ws/plivo/c-1');
    for (const [k, v] of Object.entries(PARAMS)) u.searchParams.set(k, v);
    u.searchParams.set('record', '1');
    const doc = parseTwiml(plivo.answerEvent!(hook(u.toString(), { CallUUID: 'CU1' }))!);
    expect(doc.children.map((c) => c.name)).toEqual(['Record', 'Stream', 'Hangup']);
    expect(doc.children[0]!.attrs).toMatchObject({ recordSession: 'true', callbackUrl: base });
    const t = parseTwiml(plivo.answerEvent!(hook(`${base}?doc=transfer&to=%2B14155550777&caller_id=%2B14155550601`, {}))!);
    expect(t.children[0]!.name).toBe('Dial');
    expect(t.children[0]!.attrs).toMatchObject({ callerId: '14155550601', action: base });
    expect(t.children[0]!.children[0]!.text).toBe('14155550777');
    // Not a stream URL: no stream is opened.
    expect(plivo.answerEvent!(hook(`${base}?doc=connect&stream=https://evil`, {}))).toContain('<Hangup/>');
    expect(plivo.answerEvent!(hook(base, { CallStatus: 'completed' }))).toBeUndefined();
  });

  it('maps its callbacks onto our events', () => {
    const url = 'https://cp/api/v1/telephony/calls/c-1/events/plivo';
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', CallStatus: 'timeout', Duration: '0' }))).toEqual([{ kind: 'status', callSid: 'CU1', status: 'no-answer', durationS: 0 }]);
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', CallStatus: 'cancel' }))).toEqual([{ kind: 'status', callSid: 'CU1', status: 'canceled', durationS: undefined }]);
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', Machine: 'true' }))).toEqual([{ kind: 'amd', callSid: 'CU1', answeredBy: 'machine_start' }]);
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', Machine: 'false' }))).toEqual([{ kind: 'amd', callSid: 'CU1', answeredBy: 'human' }]);
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', RecordUrl: 'https://r/1.mp3', RecordingID: 'R1' }))).toEqual([{ kind: 'recording', callSid: 'CU1', url: 'https://r/1.mp3', sid: 'R1' }]);
    expect(plivo.parseEvents(hook(url, { CallUUID: 'CU1', DialStatus: 'completed', DialAction: 'hangup' }))).toEqual([{ kind: 'dial_complete', status: 'completed' }]);
  });

  it('verifies V3 signatures; off only when told', () => {
    const url = 'https://cp/api/v1/telephony/calls/inbound/plivo';
    const params = { CallUUID: 'CU1', From: '14155550699', To: '14155550601' };
    const sig = computePlivoSignature('tok', 'POST', url, params, 'n1');
    expect(plivo.verifyWebhook(hook(url, params, { 'x-plivo-signature-v3': sig, 'x-plivo-signature-v3-nonce': 'n1' }), account, cfg)).toBe(true);
    expect(plivo.verifyWebhook(hook(url, { ...params, To: '1' }, { 'x-plivo-signature-v3': sig, 'x-plivo-signature-v3-nonce': 'n1' }), account, cfg)).toBe(false);
    expect(plivo.verifyWebhook(hook(url, params), account, cfg)).toBe(false);
    expect(plivo.verifyWebhook(hook(url, params), account, config({ PLIVO_VERIFY_SIGNATURE: 'false' }))).toBe(true);
    expect(plivo.detect('MAXXXXXXXXXXXXXXXXXX', '')).toBe(true);
    expect(plivo.detect('AC0123', '')).toBe(false);
  });
});

describe('Vonage adapter', () => {
  const vonage = createVonageAdapter(() => cfg);
  const secret = 'sig-secret-0123456789abcdef';
  const account: CarrierAccount = { carrier: 'vonage', accountSid: 'abcd1234', authToken: secret, extra: { application_id: 'app-1', private_key: '' } };

  it('connects a websocket with our headers: 8 kHz by default, 16 kHz when the account asks for it', () => {
    const connect = (a?: CarrierAccount) => JSON.parse(vonage.documents.connect('wss://node/api/v1/voice/ws/vonage/U1', PARAMS, a));
    expect(connect()).toEqual([{ action: 'connect', endpoint: [{ type: 'websocket', uri: 'wss://node/api/v1/voice/ws/vonage/U1?session_id=s-1&agent_id=a-1&call_id=c-1', 'content-type': 'audio/l16;rate=8000', headers: PARAMS }] }]);
    expect(connect(account)[0].endpoint[0]['content-type']).toBe('audio/l16;rate=8000');
    expect(connect({ ...account, extra: { ...account.extra, sample_rate_hz: '16000' } })[0].endpoint[0]['content-type']).toBe('audio/l16;rate=16000');
    // The deployment's setting reaches the environment account.
    expect(createVonageAdapter(() => cfg).envAccount(config({ VONAGE_API_KEY: 'abcd1234', VONAGE_SIGNATURE_SECRET: 's', VONAGE_SAMPLE_RATE_HZ: '16000' }))?.extra.sample_rate_hz).toBe('16000');
    expect(vonage.credentialFields.find((f) => f.name === 'sample_rate_hz')?.pattern?.test('24000')).toBe(false);
    const hold = JSON.parse(vonage.documents.hold({ announce: 'please hold', pauseS: 10, redirectUrl: 'https://cp/api/v1/telephony/calls/inbound/vonage?hold=1' }));
    expect(hold.map((a: { action: string }) => a.action)).toEqual(['talk', 'input']);
    expect(hold[1].eventUrl).toEqual(['https://cp/api/v1/telephony/calls/inbound/vonage?hold=1']);
  });

  it('maps its events onto ours', () => {
    const url = 'https://cp/api/v1/telephony/calls/c-1/events/vonage';
    const ev = (body: Record<string, string>, u = url) => vonage.parseEvents(hook(u, body, {}, body));
    expect(ev({ uuid: 'U1', status: 'answered' })).toEqual([{ kind: 'status', callSid: 'U1', status: 'in-progress', durationS: undefined }]);
    expect(ev({ uuid: 'U1', status: 'unanswered' })).toEqual([{ kind: 'status', callSid: 'U1', status: 'no-answer', durationS: undefined }]);
    expect(ev({ uuid: 'U1', status: 'completed', duration: '12' })).toEqual([{ kind: 'status', callSid: 'U1', status: 'completed', durationS: 12 }]);
    expect(ev({ uuid: 'U1', status: 'human' })).toEqual([{ kind: 'amd', callSid: 'U1', answeredBy: 'human' }]);
    expect(ev({ uuid: 'U1', status: 'machine', sub_state: 'beep_start' })).toEqual([{ kind: 'amd', callSid: 'U1', answeredBy: 'machine_end_beep' }]);
    expect(ev({ uuid: 'U1', recording_url: 'https://r/1', recording_uuid: 'R1' })).toEqual([{ kind: 'recording', callSid: 'U1', url: 'https://r/1', sid: 'R1' }]);
    expect(ev({ uuid: 'U2', status: 'completed' }, `${url}?leg=transfer`)).toEqual([{ kind: 'dial_complete', status: 'completed' }]);
    expect(ev({ uuid: 'U2', status: 'answered' }, `${url}?leg=transfer`)).toEqual([{ kind: 'ignored', type: 'transfer_answered' }]);
  });

  it('verifies signed callbacks against the body', () => {
    const body = JSON.stringify({ uuid: 'U1', status: 'answered' });
    const b64 = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
    const sign = (key: string, hash: string) => {
      const h = b64({ alg: 'HS256', typ: 'JWT' });
      const p = b64({ iat: Math.floor(Date.now() / 1000), jti: randomUUID(), payload_hash: hash, application_id: 'app-1' });
      return `Bearer ${h}.${p}.${createHmac('sha256', key).update(`${h}.${p}`).digest('base64url')}`;
    };
    const req = (auth: string) => ({ ...hook('https://cp/x', { uuid: 'U1', status: 'answered' }, { authorization: auth }, JSON.parse(body)), rawBody: body });
    const hash = createHash('sha256').update(body).digest('hex');
    expect(vonage.verifyWebhook(req(sign(secret, hash)), account, cfg)).toBe(true);
    expect(vonage.verifyWebhook(req(sign('wrong-secret-0123456789ab', hash)), account, cfg)).toBe(false);
    expect(vonage.verifyWebhook(req(sign(secret, createHash('sha256').update('{}').digest('hex'))), account, cfg)).toBe(false);
    expect(vonage.detect('abcd1234', '')).toBe(true);
  });
});

describe('Exotel adapter', () => {
  const exotel = createExotelAdapter(() => cfg);
  const account: CarrierAccount = { carrier: 'exotel', accountSid: 'acme1', authToken: 'api-token', extra: { api_key: 'api-key' } };

  it('answers the applet with the stream URL; refusals carry none', () => {
    expect(JSON.parse(exotel.documents.connect('wss://node/api/v1/voice/ws/exotel/CA1', PARAMS))).toEqual({ url: 'wss://node/api/v1/voice/ws/exotel/CA1?session_id=s-1&agent_id=a-1&call_id=c-1' });
    expect(JSON.parse(exotel.documents.sayAndHangup('not in service')).url).toBeUndefined();
  });

  it('maps status callbacks (status and recording from one terminal callback)', () => {
    const url = 'https://cp/api/v1/telephony/calls/c-1/events/exotel?sig=x';
    expect(exotel.parseEvents(hook(url, { CallSid: 'CA1', EventType: 'answered', Status: 'in-progress' }))).toEqual([{ kind: 'status', callSid: 'CA1', status: 'in-progress', durationS: undefined }]);
    expect(exotel.parseEvents(hook(url, { CallSid: 'CA1', EventType: 'terminal', Status: 'completed', ConversationDuration: '9', RecordingUrl: 'https://r/1' }))).toEqual([
      { kind: 'status', callSid: 'CA1', status: 'completed', durationS: 9 },
      { kind: 'recording', callSid: 'CA1', url: 'https://r/1', sid: 'CA1' },
    ]);
  });

  it('authenticates callbacks by the URL sig and the applet by basic auth; cannot transfer', async () => {
    const cb = `https://cp/api/v1/telephony/calls/c-1/events/exotel?sig=${exotelCallbackSig('api-token', 'c-1')}`;
    expect(exotel.verifyWebhook(hook(cb, {}), account, cfg)).toBe(true);
    expect(exotel.verifyWebhook(hook(cb.replace('/c-1/', '/c-2/'), {}), account, cfg)).toBe(false);
    const inbound = 'https://cp/api/v1/telephony/calls/inbound/exotel?CallSid=CA1';
    const basic = `Basic ${Buffer.from('api-key:api-token').toString('base64')}`;
    expect(exotel.verifyWebhook(hook(inbound, {}, { authorization: basic }), account, cfg)).toBe(true);
    expect(exotel.verifyWebhook(hook(inbound, {}), account, cfg)).toBe(false);
    await expect(exotel.transfer(account, 'CA1', { toNumber: '+1', callerId: '+1', actionUrl: '', callbackBase: '' })).rejects.toMatchObject({ status: 400 });
    expect(exotel.detect('acme1', 'api-token')).toBe(false);
  });
});
