/**
 * Hand-off to a person on every carrier that can (issue 21 on issue 24's carriers), without a
 * network: the person's address per carrier (default, the account's `person_uri` template, an
 * invalid template ignored), the documents that dial the person (Twilio `<Client>`, SignalWire
 * `<Sip>`, Plivo `<User>` answered on its events route, Vonage `app` / `sip` endpoints), the REST
 * request each dial makes (against a local fake carrier API), and Exotel, which has no hand-off.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { createCarrierAdapters } from '../../../control-plane/telephony/carriers/index.js';
import { personUriField } from '../../../control-plane/telephony/carriers/person.js';
import { sipDomainOf } from '../../../control-plane/telephony/carriers/signalwire.js';
import { connectPerson } from '../../../control-plane/telephony/carriers/vonage-ncco.js';
import type { CarrierAccount, CarrierName } from '../../../control-plane/telephony/carriers/types.js';
import { dialSip } from '../../../control-plane/telephony/twiml.js';
import { parseTwiml } from '../../carrier-sim/twiml.js';

const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x', JWT_SECRET: 'x'.repeat(40), SECRETS_KEY: 'ab'.repeat(32) } as never);
const adapters = createCarrierAdapters(() => config);
const ID = 'human-0b7c4d4e-1f0a-4c39-9d55-0123456789ab';
const acct = (carrier: CarrierName, extra: Record<string, string> = {}): CarrierAccount => ({ carrier, accountSid: 'x', authToken: 'y', extra });
const address = (carrier: CarrierName, extra: Record<string, string> = {}) => adapters.get(carrier)!.handoff!.address(acct(carrier, extra), ID);

describe('the person each carrier dials', () => {
  it('defaults: a Twilio client, the SignalWire space SIP domain, Telnyx and Plivo SIP endpoints, a Vonage app user', () => {
    expect(address('twilio')).toBe(`client:${ID}`);
    expect(address('signalwire', { space_url: 'https://acme.signalwire.com' })).toBe(`sip:${ID}@acme.sip.signalwire.com`);
    expect(address('telnyx')).toBe(`sip:${ID}@sip.telnyx.com`);
    expect(address('plivo')).toBe(`sip:${ID}@phone.plivo.com`);
    expect(address('vonage')).toBe(`app:${ID}`);
  });

  it('the account template wins; SignalWire without a signalwire.com space has no default', () => {
    expect(address('telnyx', { person_uri: 'sip:{identity}@pbx.example.com;transport=tls' })).toBe(`sip:${ID}@pbx.example.com;transport=tls`);
    expect(address('plivo', { person_uri: 'sip:agents-{identity}@phone.plivo.com' })).toBe(`sip:agents-${ID}@phone.plivo.com`);
    expect(address('vonage', { person_uri: 'sip:{identity}@pbx.example.com' })).toBe(`sip:${ID}@pbx.example.com`);
    expect(address('signalwire', { space_url: 'http://127.0.0.1:4000' })).toBe('');
    expect(address('signalwire', { space_url: 'http://127.0.0.1:4000', person_uri: 'sip:{identity}@acme.sip.signalwire.com' })).toBe(`sip:${ID}@acme.sip.signalwire.com`);
    expect(sipDomainOf('https://Acme-2.signalwire.com/')).toBe('sip:{identity}@acme-2.sip.signalwire.com');
  });

  it('a template that is not a SIP URI with {identity} is refused where stored, and ignored from the environment', () => {
    const sip = personUriField({ app: false }).pattern!;
    const app = personUriField({ app: true }).pattern!;
    for (const bad of ['sip:desk@pbx.example.com', 'tel:+14155550100', 'sip:{identity}@x"><Hangup/>', 'https://x/{identity}', 'app:{identity}']) expect(sip.test(bad), bad).toBe(false);
    expect(app.test('app:{identity}')).toBe(true);
    expect(app.test('app:desk')).toBe(false);
    // An environment value is not validated by settings: a bad one falls back to the default.
    expect(address('plivo', { person_uri: 'sip:desk@pbx' })).toBe(`sip:${ID}@phone.plivo.com`);
  });

  it('Exotel has no hand-off (its Voicebot stream cannot be redirected to a person)', () => {
    expect(adapters.get('exotel')!.handoff).toBeUndefined();
  });
});

describe('the documents that dial the person', () => {
  it('SignalWire: <Dial><Sip> with the action URL (LaML has no <Client>)', () => {
    const dial = parseTwiml(dialSip({ uri: `sip:${ID}@acme.sip.signalwire.com`, callerId: '+14155550100', actionUrl: 'https://cp/api/v1/telephony/calls/c-1/dial-complete' })).children[0]!;
    expect(dial).toMatchObject({ name: 'Dial', attrs: { callerId: '+14155550100', action: 'https://cp/api/v1/telephony/calls/c-1/dial-complete' } });
    expect(dial.children.find((c) => c.name === 'Sip')?.text).toBe(`sip:${ID}@acme.sip.signalwire.com`);
  });

  it('Plivo: the A leg fetches ?doc=person and runs <Dial><User>; anything but a SIP URI hangs up', () => {
    const plivo = adapters.get('plivo')!;
    const url = (to: string) => `https://cp/api/v1/telephony/calls/c-1/events/plivo?doc=person&to=${encodeURIComponent(to)}&caller_id=%2B14155550100`;
    const req = (to: string) => ({ url: url(to), headers: new Headers(), rawBody: '', params: { CallUUID: 'U1' } });
    const dial = parseTwiml(plivo.answerEvent!(req(`sip:${ID}@phone.plivo.com`))!).children.find((v) => v.name === 'Dial')!;
    expect(dial).toMatchObject({ name: 'Dial', attrs: { callerId: '14155550100', action: 'https://cp/api/v1/telephony/calls/c-1/events/plivo' } });
    expect(dial.children.find((c) => c.name === 'User')?.text).toBe(`sip:${ID}@phone.plivo.com`);
    expect(parseTwiml(plivo.answerEvent!(req('+14155550199'))!).children[0]!.name).toBe('Hangup');
    expect(plivo.parseEvents(req(`sip:${ID}@phone.plivo.com`))).toEqual([{ kind: 'ignored', type: 'transfer_answer' }]);
  });

  it('Vonage: connect to an app user or a SIP endpoint, its leg reported as the transfer (after the record action)', () => {
    const actionUrl = 'https://cp/api/v1/telephony/calls/c-1/events/vonage?leg=transfer';
    const recordingEventUrl = 'https://cp/api/v1/telephony/calls/c-1/events/vonage?leg=person';
    expect(connectPerson({ address: `app:${ID}`, callerId: '+14155550100', actionUrl, recordingEventUrl })[1]).toEqual({
      action: 'connect',
      from: '14155550100',
      timeout: 30,
      eventUrl: [actionUrl],
      eventMethod: 'POST',
      endpoint: [{ type: 'app', user: ID }],
    });
    expect(connectPerson({ address: `sip:${ID}@pbx.example.com`, callerId: '+14155550100', actionUrl, recordingEventUrl })[1]!.endpoint).toEqual([{ type: 'sip', uri: `sip:${ID}@pbx.example.com` }]);
  });
});

describe('the dial request each carrier gets (a local fake of its REST API)', () => {
  let server: Server;
  let base = '';
  const seen: Array<{ method: string; path: string; body: string }> = [];

  beforeAll(async () => {
    server = createServer((req, res) => {
      let body = '';
      req.on('data', (c) => (body += c));
      req.on('end', () => {
        seen.push({ method: req.method ?? '', path: req.url ?? '', body });
        res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
      });
    });
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((r) => server.close(() => r())));

  const req = { callerId: '+14155550100', actionUrl: 'https://cp/api/v1/telephony/calls/c-1/dial-complete', callbackBase: 'https://cp/api/v1/telephony/calls/c-1' };

  it('SignalWire updates the live call with <Dial><Sip>; Telnyx transfers to the SIP URI; Plivo points the A leg at ?doc=person', async () => {
    const cfg = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x', JWT_SECRET: 'x'.repeat(40), SECRETS_KEY: 'ab'.repeat(32), TELNYX_API_BASE_URL: base, PLIVO_API_BASE_URL: base } as never);
    const a = createCarrierAdapters(() => cfg);
    const sw = acct('signalwire', { space_url: base, person_uri: 'sip:{identity}@acme.sip.signalwire.com' });
    await a.get('signalwire')!.handoff!.dial(sw, 'CA1', { ...req, address: a.get('signalwire')!.handoff!.address(sw, ID) });
    await a.get('telnyx')!.handoff!.dial(acct('telnyx'), 'v3:cc1', { ...req, address: address('telnyx') });
    await a.get('plivo')!.handoff!.dial(acct('plivo'), 'U1', { ...req, address: address('plivo') });
    const [s, t, p] = seen;
    expect(s!.path).toBe('/api/laml/2010-04-01/Accounts/x/Calls/CA1.json');
    const dial = parseTwiml(new URLSearchParams(s!.body).get('Twiml')!).children[0]!;
    expect(dial.children.find((c) => c.name === 'Sip')?.text).toBe(`sip:${ID}@acme.sip.signalwire.com`);
    expect(t!.path).toBe('/v2/calls/v3%3Acc1/actions/transfer');
    // The person's leg is recorded (two channels, WAV); its events come marked as that leg's.
    expect(JSON.parse(t!.body)).toEqual({
      to: `sip:${ID}@sip.telnyx.com`,
      from: '+14155550100',
      webhook_url: 'https://cp/api/v1/telephony/calls/c-1/events/telnyx?leg=person',
      webhook_url_method: 'POST',
      record: 'record-from-answer',
      record_channels: 'dual',
      record_format: 'wav',
    });
    expect(p!.path).toBe('/v1/Account/x/Call/U1/');
    const aleg = new URL(JSON.parse(p!.body).aleg_url);
    expect([aleg.pathname, aleg.searchParams.get('doc'), aleg.searchParams.get('to')]).toEqual(['/api/v1/telephony/calls/c-1/events/plivo', 'person', `sip:${ID}@phone.plivo.com`]);
  });
});
