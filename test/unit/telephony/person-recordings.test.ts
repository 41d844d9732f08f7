/**
 * The recording of the person's leg of a hand-off (issue 21, `transcribe_human_segment`), per
 * carrier, without a network: what each dial asks the carrier to record (two channels, WAV), how
 * each carrier's callback naming the recording is read (`dial_complete` with it on Twilio and
 * SignalWire, `leg_recording` on Telnyx, Plivo and Vonage, told apart from the whole call's
 * recording by `?leg=person`), and where each carrier's credentials may go when downloading it
 * (`recordingRequest`: docs/portal.md "Transcript of the human segment").
 */
import { generateKeyPairSync } from 'node:crypto';
import { decodeJwt } from 'jose';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { createCarrierAdapters } from '../../../control-plane/telephony/carriers/index.js';
import { recordingRef } from '../../../control-plane/telephony/carriers/recording.js';
import { connectPerson } from '../../../control-plane/telephony/carriers/vonage-ncco.js';
import type { CarrierAccount, CarrierName, WebhookRequest } from '../../../control-plane/telephony/carriers/types.js';
import { parseTwiml } from '../../carrier-sim/twiml.js';

const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x', JWT_SECRET: 'x'.repeat(40), SECRETS_KEY: 'ab'.repeat(32) } as never);
const adapters = createCarrierAdapters(() => config);
const adapter = (c: CarrierName) => adapters.get(c)!;
const EVENTS = 'https://cp.example.com/api/v1/telephony/calls/c-1/events';
const basic = (user: string, pass: string) => `Basic ${Buffer.from(`${user}:${pass}`).toString('base64')}`;

const form = (url: string, params: Record<string, string>): WebhookRequest => ({ url, headers: new Headers(), rawBody: new URLSearchParams(params).toString(), params });
const json = (url: string, body: Record<string, unknown>): WebhookRequest => ({
  url,
  headers: new Headers(),
  rawBody: JSON.stringify(body),
  params: Object.fromEntries(Object.entries(body).filter(([, v]) => typeof v === 'string')) as Record<string, string>,
  json: body,
});

describe('what each hand-off asks the carrier to record', () => {
  it('every carrier that can hand off says where it names the recording', () => {
    const where = Object.fromEntries([...adapters.values()].filter((a) => a.handoff).map((a) => [a.id, a.handoff!.recordingInCallback]));
    expect(where).toEqual({ twilio: false, signalwire: false, telnyx: true, plivo: true, vonage: true });
  });

  it('Plivo: <Record startOnDialAnswer> as stereo WAV before <Dial><User>, announced to ?leg=person', () => {
    const url = `${EVENTS}/plivo?doc=person&to=${encodeURIComponent('sip:human-1@phone.plivo.com')}&caller_id=%2B14155550100`;
    const [record, dial] = parseTwiml(adapter('plivo').answerEvent!(form(url, { CallUUID: 'U1' }))!).children;
    expect(record).toMatchObject({ name: 'Record', attrs: { startOnDialAnswer: 'true', redirect: 'false', fileFormat: 'wav', recordChannelType: 'stereo', callbackUrl: `${EVENTS}/plivo?leg=person`, callbackMethod: 'POST' } });
    expect(Number(record!.attrs.maxLength)).toBeGreaterThan(3600);
    expect(dial).toMatchObject({ name: 'Dial', attrs: { action: `${EVENTS}/plivo` } });
  });

  it('Vonage: a record action split by party (two channels, WAV) before the connect, its event to ?leg=person', () => {
    const [record, connect] = connectPerson({ address: 'app:human-1', callerId: '+14155550100', actionUrl: `${EVENTS}/vonage?leg=transfer`, recordingEventUrl: `${EVENTS}/vonage?leg=person` });
    expect(record).toEqual({ action: 'record', split: 'conversation', channels: 2, format: 'wav', eventUrl: [`${EVENTS}/vonage?leg=person`], eventMethod: 'POST' });
    expect(connect).toMatchObject({ action: 'connect', eventUrl: [`${EVENTS}/vonage?leg=transfer`] });
  });
});

describe('the callback that names the recording', () => {
  it('Twilio and SignalWire: the <Dial action> ends the leg and names it (SignalWire sends no RecordingSid: the URL names it)', () => {
    const twilio = form('https://x/api', { CallSid: 'CA1', DialCallStatus: 'completed', RecordingUrl: 'https://r/RE1', RecordingSid: 'RE1' });
    expect(adapter('twilio').parseEvents(twilio)).toEqual([{ kind: 'dial_complete', status: 'completed', recording: { url: 'https://r/RE1', sid: 'RE1' } }]);
    const swUrl = 'https://acme.signalwire.com/api/laml/2010-04-01/Accounts/p1/Recordings/0b7c4d4e-1f0a-4c39-9d55-0123456789ab';
    const sw = form('https://x/api', { CallSid: 'CA1', DialCallStatus: 'completed', RecordingUrl: swUrl });
    expect(adapter('signalwire').parseEvents(sw)).toEqual([{ kind: 'dial_complete', status: 'completed', recording: { url: swUrl, sid: '0b7c4d4e-1f0a-4c39-9d55-0123456789ab' } }]);
  });

  it('Telnyx: call.recording.saved of the person\'s leg (the WAV link), the whole call\'s stays a call recording', () => {
    const payload = { call_leg_id: 'leg-b', channels: 'dual', recording_urls: { mp3: null, wav: 'https://s3.example/r/1.wav?X-Amz-Signature=s' } };
    const event = (url: string) => json(url, { data: { event_type: 'call.recording.saved', payload: { call_control_id: 'v3:b', ...payload } } });
    expect(adapter('telnyx').parseEvents(event(`${EVENTS}/telnyx?leg=person`))).toEqual([{ kind: 'leg_recording', recording: { url: payload.recording_urls.wav, sid: 'leg-b' } }]);
    expect(adapter('telnyx').parseEvents(event(`${EVENTS}/telnyx`))).toEqual([{ kind: 'recording', callSid: 'v3:b', url: payload.recording_urls.wav, sid: '' }]);
  });

  it('Plivo: the <Record> callback on ?leg=person; the session recording on the bare route', () => {
    const params = { CallUUID: 'U1', RecordUrl: 'https://media.plivo.com/v1/Account/MA1/Recording/R1.wav', RecordingID: 'R1', RecordingDuration: '12' };
    expect(adapter('plivo').parseEvents(form(`${EVENTS}/plivo?leg=person`, params))).toEqual([{ kind: 'leg_recording', recording: { url: params.RecordUrl, sid: 'R1' } }]);
    expect(adapter('plivo').parseEvents(form(`${EVENTS}/plivo`, params))).toEqual([{ kind: 'recording', callSid: 'U1', url: params.RecordUrl, sid: 'R1' }]);
  });

  it('Vonage: the record event on ?leg=person (it carries no call uuid)', () => {
    const body = { start_time: '2026-01-01T00:00:00Z', recording_url: 'https://api.nexmo.com/v1/files/f-1', size: 12222, recording_uuid: 'r-1', end_time: '2026-01-01T00:00:30Z', conversation_uuid: 'CON-1', timestamp: '2026-01-01T00:00:31Z' };
    expect(adapter('vonage').parseEvents(json(`${EVENTS}/vonage?leg=person`, body))).toEqual([{ kind: 'leg_recording', recording: { url: body.recording_url, sid: 'r-1' } }]);
  });

  it('a URL that is not http(s) or too long is not kept; ids are cut to 64 characters', () => {
    expect(recordingRef('ftp://r/1.wav', 'x')).toBeUndefined();
    expect(recordingRef(`https://r/${'a'.repeat(2100)}`, 'x')).toBeUndefined();
    expect(recordingRef('https://r/1.wav', 'y'.repeat(80))!.sid).toHaveLength(64);
    expect(adapter('plivo').parseEvents(form(`${EVENTS}/plivo?leg=person`, { RecordUrl: 'javascript:x', RecordingID: 'R1' }))).toEqual([{ kind: 'ignored', type: 'recording' }]);
  });
});

describe('where each carrier\'s credentials may go (recordingRequest)', () => {
  const acct = (carrier: CarrierName, accountSid: string, extra: Record<string, string> = {}): CarrierAccount => ({ carrier, accountSid, authToken: 'tok', extra });

  it('Twilio: only its API host, as .wav with basic auth', async () => {
    const a = acct('twilio', `AC${'a'.repeat(32)}`);
    const api = config.twilioApiBaseUrl.replace(/\/+$/, '');
    const r = await adapter('twilio').recordingRequest!(a, `${api}/2010-04-01/Accounts/${a.accountSid}/Recordings/RE1`);
    expect(r).toEqual({ url: `${api}/2010-04-01/Accounts/${a.accountSid}/Recordings/RE1.wav`, headers: { authorization: basic(a.accountSid, 'tok') } });
    expect((await adapter('twilio').recordingRequest!(a, `${api}/x/RE1.wav`))?.url).toBe(`${api}/x/RE1.wav`);
    expect(await adapter('twilio').recordingRequest!(a, 'https://evil.example/2010-04-01/Recordings/RE1')).toBeUndefined();
    expect(await adapter('twilio').recordingRequest!(a, 'not a url')).toBeUndefined();
  });

  it('SignalWire: only the account\'s space (its recordings are also public there)', async () => {
    const a = acct('signalwire', 'p1', { space_url: 'https://acme.signalwire.com' });
    const r = await adapter('signalwire').recordingRequest!(a, 'https://acme.signalwire.com/api/laml/2010-04-01/Accounts/p1/Recordings/u1');
    expect(r).toEqual({ url: 'https://acme.signalwire.com/api/laml/2010-04-01/Accounts/p1/Recordings/u1.wav', headers: { authorization: basic('p1', 'tok') } });
    expect(await adapter('signalwire').recordingRequest!(a, 'https://other.signalwire.com/api/laml/2010-04-01/Accounts/p1/Recordings/u1')).toBeUndefined();
  });

  it('Telnyx: the pre-signed link is fetched as it is, never with the API key', async () => {
    const link = 'https://s3.amazonaws.com/telephony-recorder-prod/r/1.wav?X-Amz-Expires=600&X-Amz-Signature=abc';
    expect(await adapter('telnyx').recordingRequest!(acct('telnyx', '1494'), link)).toEqual({ url: link, headers: {} });
    expect(await adapter('telnyx').recordingRequest!(acct('telnyx', '1494'), 'https://user:pw@s3.example/r.wav')).toBeUndefined();
  });

  it('Plivo: basic auth only on its media host (or the API base) under this account; other links without credentials', async () => {
    const a = acct('plivo', 'MAAAAAAAAAAAAAAAAAAA');
    const own = `https://media.plivo.com/v1/Account/${a.accountSid}/Recording/R1.wav`;
    expect(await adapter('plivo').recordingRequest!(a, own)).toEqual({ url: own, headers: { authorization: basic(a.accountSid, 'tok') } });
    const other = 'https://media.plivo.com/v1/Account/MABBBBBBBBBBBBBBBBBB/Recording/R1.wav';
    expect(await adapter('plivo').recordingRequest!(a, other)).toEqual({ url: other, headers: {} });
    const legacy = 'https://s3.amazonaws.com/recordings_2013/R1.wav';
    expect(await adapter('plivo').recordingRequest!(a, legacy)).toEqual({ url: legacy, headers: {} });
    const api = `https://api.plivo.com/v1/Account/${a.accountSid}/Recording/R1.wav`;
    expect((await adapter('plivo').recordingRequest!(a, api))?.headers.authorization).toBe(basic(a.accountSid, 'tok'));
  });

  it('Vonage: the application JWT only to its API hosts and /v1/files/; anything else is no Vonage recording', async () => {
    const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const a = acct('vonage', 'abcd1234', { application_id: '0b7c4d4e-1f0a-4c39-9d55-0123456789ab', private_key: privateKey });
    for (const url of ['https://api.nexmo.com/v1/files/f-1', 'https://api-us.nexmo.com/v1/files/f-1', 'https://api-eu-3.vonage.com/v1/files/f-1']) {
      const r = await adapter('vonage').recordingRequest!(a, url);
      expect(r?.url, url).toBe(url);
      expect(decodeJwt(r!.headers.authorization!.replace(/^Bearer /, ''))).toMatchObject({ application_id: a.extra.application_id });
    }
    for (const url of ['https://evil.example/v1/files/f-1', 'http://api.nexmo.com/v1/files/f-1', 'https://api.nexmo.com/v1/calls/x', 'https://api.nexmo.com.evil.example/v1/files/f-1']) {
      expect(await adapter('vonage').recordingRequest!(a, url), url).toBeUndefined();
    }
    // No application key: no JWT to send (the download fails without a request).
    await expect(adapter('vonage').recordingRequest!(acct('vonage', 'abcd1234'), 'https://api.nexmo.com/v1/files/f-1')).rejects.toThrow(/application_id/);
  });
});
