/**
 * Carrier adapters without a network: Telnyx Ed25519 webhook verification (valid, forged key,
 * tampered body, stale timestamp), Telnyx events normalized to ours (and the end events of a
 * refusal's speech or a hold round, read back from our client_state), SignalWire signatures with
 * the signing key (not the API token), detection of each carrier from its credentials' shapes,
 * and the masked view of secrets.
 */
import { generateKeyPairSync } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { createCarrierAdapters } from '../../../control-plane/telephony/carriers/index.js';
import { signTelnyx, verifyTelnyxSignature } from '../../../control-plane/telephony/carriers/telnyx-signature.js';
import { computeSignature } from '../../../control-plane/telephony/signature.js';
import { mask } from '../../../control-plane/telephony/carrier-accounts.js';
import type { WebhookRequest } from '../../../control-plane/telephony/carriers/types.js';

const config = loadConfig({ NODE_ENV: 'test', DATABASE_URL: 'postgres://x@127.0.0.1/x', JWT_SECRET: 'x'.repeat(40), SECRETS_KEY: 'ab'.repeat(32) } as never);
const adapters = createCarrierAdapters(() => config);
const telnyx = adapters.get('telnyx')!;
const signalwire = adapters.get('signalwire')!;

function keyPair() {
  const { publicKey, privateKey } = generateKeyPairSync('ed25519');
  return { privateKey, pub: publicKey.export({ format: 'der', type: 'spki' }).subarray(-32).toString('base64') };
}

function hook(body: unknown, headers: Record<string, string> = {}): WebhookRequest {
  const raw = JSON.stringify(body);
  return { url: 'https://x/api', headers: new Headers(headers), rawBody: raw, params: {}, json: body };
}

describe('telnyx signatures', () => {
  const k = keyPair();
  const now = 1_800_000_000;
  const body = '{"data":{"event_type":"call.answered"}}';
  const sig = signTelnyx(k.privateKey, body, String(now));

  it('accepts the carrier signature, refuses forged, tampered and stale ones', () => {
    expect(verifyTelnyxSignature(k.pub, body, sig, String(now), now)).toBe(true);
    expect(verifyTelnyxSignature(keyPair().pub, body, sig, String(now), now)).toBe(false);
    expect(verifyTelnyxSignature(k.pub, body.replace('answered', 'hangup'), sig, String(now), now)).toBe(false);
    expect(verifyTelnyxSignature(k.pub, body, sig, String(now), now + 301)).toBe(false);
    expect(verifyTelnyxSignature(k.pub, body, sig, 'abc', now)).toBe(false);
    expect(verifyTelnyxSignature(k.pub, body, null, String(now), now)).toBe(false);
    expect(verifyTelnyxSignature('bm90IGEga2V5', body, sig, String(now), now)).toBe(false);
  });

  it('the adapter checks the account public key, and accepts when none is known', () => {
    const ts = String(Math.floor(Date.now() / 1000));
    const raw = { data: { event_type: 'call.answered', payload: {} } };
    const good = hook(raw, { 'telnyx-timestamp': ts, 'telnyx-signature-ed25519': signTelnyx(k.privateKey, JSON.stringify(raw), ts) });
    const account = { carrier: 'telnyx' as const, accountSid: '123', authToken: 'KEY1', extra: { public_key: k.pub } };
    expect(telnyx.verifyWebhook(good, account, config)).toBe(true);
    expect(telnyx.verifyWebhook({ ...good, rawBody: good.rawBody + ' ' }, account, config)).toBe(false);
    expect(telnyx.verifyWebhook(good, { ...account, extra: {} }, config)).toBe(true);
  });
});

describe('telnyx events', () => {
  const ev = (event_type: string, payload: Record<string, unknown>) => telnyx.parseEvents(hook({ data: { event_type, payload: { call_control_id: 'v3:x', ...payload } } }));
  const beep = Buffer.from(JSON.stringify({ b: 1 })).toString('base64');

  it.each([
    ['call.initiated', {}, [{ kind: 'status', callSid: 'v3:x', status: 'initiated' }]],
    ['call.answered', {}, [{ kind: 'status', callSid: 'v3:x', status: 'in-progress' }]],
    ['call.hangup', { hangup_cause: 'user_busy' }, [{ kind: 'status', callSid: 'v3:x', status: 'busy', durationS: undefined }]],
    ['call.hangup', { hangup_cause: 'timeout' }, [{ kind: 'status', callSid: 'v3:x', status: 'no-answer', durationS: undefined }]],
    ['call.hangup', { hangup_cause: 'normal_clearing', start_time: '2026-01-01T00:00:00Z', end_time: '2026-01-01T00:01:05Z' }, [{ kind: 'status', callSid: 'v3:x', status: 'completed', durationS: 65 }]],
    ['call.machine.detection.ended', { result: 'human' }, [{ kind: 'amd', callSid: 'v3:x', answeredBy: 'human' }]],
    ['call.machine.detection.ended', { result: 'machine' }, [{ kind: 'amd', callSid: 'v3:x', answeredBy: 'machine_start' }]],
    ['call.machine.detection.ended', { result: 'not_sure' }, [{ kind: 'amd', callSid: 'v3:x', answeredBy: 'unknown' }]],
    ['call.machine.detection.ended', { result: 'machine', client_state: beep }, []],
    ['call.machine.greeting.ended', { result: 'beep_detected', client_state: beep }, [{ kind: 'amd', callSid: 'v3:x', answeredBy: 'machine_end_beep' }]],
    ['call.recording.saved', { recording_id: 'r1', recording_urls: { mp3: 'https://r/1.mp3' } }, [{ kind: 'recording', callSid: 'v3:x', url: 'https://r/1.mp3', sid: 'r1' }]],
    ['streaming.stopped', {}, [{ kind: 'stream_ended', callSid: 'v3:x' }]],
    ['call.speak.ended', {}, [{ kind: 'ignored', type: 'call.speak.ended' }]],
  ])('%s %j', (type, payload, expected) => {
    expect(ev(type, payload)).toEqual(expected);
  });

  it('inbound: only an incoming call.initiated is a call', () => {
    expect(telnyx.parseInbound(hook({ data: { event_type: 'call.initiated', payload: { call_control_id: 'v3:y', direction: 'incoming', from: '+1', to: '+2', connection_id: 'c' } } }))).toEqual({ callSid: 'v3:y', from: '+1', to: '+2', accountSid: 'c' });
    expect(telnyx.parseInbound(hook({ data: { event_type: 'call.initiated', payload: { direction: 'outgoing' } } }))).toBeUndefined();
    expect(telnyx.parseInbound(hook({ data: { event_type: 'call.hangup', payload: {} } }))).toBeUndefined();
    expect(telnyx.parseInbound(hook('garbage'))).toBeUndefined();
  });

  // The end of a refusal's speech or of a hold round's audio, back on the inbound route: the step
  // and the numbers come from our client_state (these events carry none), bounded at the edge.
  const state = (o: Record<string, unknown>) => Buffer.from(JSON.stringify(o)).toString('base64');
  const step = (event_type: string, payload: Record<string, unknown>) =>
    telnyx.parseInbound(hook({ data: { event_type, payload: { call_control_id: 'v3:z', connection_id: 'c', ...payload } } }));
  const who = { t: '+14155550100', f: '+14155550199' };
  const call = { callSid: 'v3:z', from: '+14155550199', to: '+14155550100', accountSid: 'c' };
  it.each([
    ['call.speak.ended', { status: 'completed', client_state: state({ s: 'r', ...who }) }, { ...call, step: { kind: 'refused' } }],
    ['call.speak.ended', { status: 'cancelled_amd', client_state: state({ s: 'r', ...who }) }, { ...call, step: { kind: 'refused' } }],
    ['call.speak.ended', { status: 'call_hangup', client_state: state({ s: 'r', ...who }) }, undefined],
    // The announcement's speech ends with the round's state in force: only the playback counts.
    ['call.speak.ended', { status: 'completed', client_state: state({ s: 'h', n: 1, ...who }) }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'h', n: 3, ...who }) }, { ...call, step: { kind: 'hold', round: 3, pauseOnly: false } }],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'h', n: 3, p: 1, ...who }) }, { ...call, step: { kind: 'hold', round: 3, pauseOnly: true } }],
    ['call.playback.ended', { status: 'file_not_found', client_state: state({ s: 'h', n: 2, ...who }) }, { ...call, step: { kind: 'hold', round: 2, pauseOnly: true } }],
    ['call.playback.ended', { status: 'call_hangup', client_state: state({ s: 'h', n: 2, ...who }) }, undefined],
    ['call.playback.ended', { status: 'cancelled', client_state: state({ s: 'h', n: 2, ...who }) }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'r', ...who }) }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'h', n: 1e9, ...who }) }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'h', n: 1.5, ...who }) }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: state({ s: 'h', n: 1, t: '+1'.repeat(20), f: 7 }) }, { ...call, from: '', to: '', step: { kind: 'hold', round: 1, pauseOnly: false } }],
    ['call.playback.ended', { status: 'completed', client_state: 'not base64 json' }, undefined],
    ['call.playback.ended', { status: 'completed', client_state: 'A'.repeat(2000) }, undefined],
    ['call.playback.ended', { status: 'completed' }, undefined],
  ])('inbound step: %s %j', (type, payload, expected) => {
    expect(step(type, payload)).toEqual(expected);
  });
});

describe('signalwire signatures', () => {
  it('verifies with the signing key, not the API token', () => {
    const url = 'https://api.example.com/api/v1/telephony/calls/inbound/signalwire';
    const params = { CallSid: 'CA1', To: '+14155550100' };
    const account = { carrier: 'signalwire' as const, accountSid: '1b2c3d4e-0000-4000-8000-123456789abc', authToken: 'PT-token', extra: { signing_key: 'PSK_key', space_url: 'https://x.signalwire.com' } };
    const req = (sig: string): WebhookRequest => ({ url, headers: new Headers({ 'x-signalwire-signature': sig }), rawBody: '', params });
    expect(signalwire.verifyWebhook(req(computeSignature('PSK_key', url, params)), account, config)).toBe(true);
    expect(signalwire.verifyWebhook(req(computeSignature('PT-token', url, params)), account, config)).toBe(false);
  });
});

describe('detection from credentials', () => {
  it.each([
    ['AC0123456789abcdef0123456789abcdef', 'token', 'twilio'],
    ['1b2c3d4e-0000-4000-8000-123456789abc', 'PT123', 'signalwire'],
    ['1494404757140276705', 'KEY0188ABCDEF_xyz', 'telnyx'],
  ])('%s / %s -> %s', (sid, token, carrier) => {
    expect([...adapters.values()].filter((a) => a.detect(sid, token)).map((a) => a.id)).toEqual([carrier]);
  });
});

describe('masking', () => {
  it('shows only the last four characters of long secrets', () => {
    expect(mask('KEY0188ABCDEF_xyz1')).toBe('••••xyz1');
    expect(mask('short')).toBe('••••');
  });
});
