/**
 * Webhook authentication of Plivo (X-Plivo-Signature-V3, vectors computed with `openssl dgst
 * -sha256 -hmac` over signing strings written out by hand from plivo-node's algorithm), Vonage
 * (signed-callback JWTs, application JWTs) and Exotel (callback sig, basic auth): genuine requests
 * pass, forged or altered ones do not.
 */
import { createHash, generateKeyPairSync } from 'node:crypto';
import { decodeJwt, decodeProtectedHeader, importSPKI, jwtVerify, SignJWT } from 'jose';
import { describe, expect, it } from 'vitest';
import { exotelCallbackSig, verifyExotelBasicAuth, verifyExotelCallbackSig } from '../../../control-plane/telephony/carriers/exotel.js';
import { computePlivoSignature, plivoSigningString, verifyPlivoSignature } from '../../../control-plane/telephony/carriers/plivo-signature.js';
import { appJwt, verifyVonageCallback } from '../../../control-plane/telephony/carriers/vonage-jwt.js';

describe('X-Plivo-Signature-V3', () => {
  const form = { To: '+14155550199', From: '+14155550100', CallUUID: 'abc' };

  it('builds the signing string as plivo-node does', () => {
    expect(plivoSigningString('POST', 'https://example.com/telephony/calls/inbound/plivo?b=1&a=2', form)).toBe('https://example.com/telephony/calls/inbound/plivo?a=2&b=1.CallUUID=abcFrom=+14155550100To=+14155550199');
    expect(plivoSigningString('POST', 'https://example.com/cb', { Event: 'Hangup', CallUUID: 'abc' })).toBe('https://example.com/cb?CallUUID=abcEvent=Hangup');
    expect(plivoSigningString('POST', 'https://example.com/cb', {})).toBe('https://example.com/cb');
  });

  it('matches known vectors and verifies them', () => {
    const url = 'https://example.com/telephony/calls/inbound/plivo?b=1&a=2';
    expect(computePlivoSignature('tok3n', 'POST', url, form, 'nonce-123')).toBe('5qtQBIbF7YkGENKSI4AGlNAWgloCsHvrDTc25+76ROo=');
    expect(computePlivoSignature('tok3n', 'POST', 'https://example.com/cb', { Event: 'Hangup', CallUUID: 'abc' }, 'n2')).toBe('KAyh82LH19O7BzkmYhmMok6uUpU1jvCH5MqTmPxW2SA=');
    expect(computePlivoSignature('tok3n', 'POST', 'https://example.com/cb', {}, 'n3')).toBe('q4YnCQg+mXqlkHTiFucU08z5H5w0Z2HU6DkA6CHWjlo=');
    expect(verifyPlivoSignature('tok3n', 'POST', url, form, 'nonce-123', '5qtQBIbF7YkGENKSI4AGlNAWgloCsHvrDTc25+76ROo=')).toBe(true);
    // Several auth tokens: comma-separated, any match.
    expect(verifyPlivoSignature('tok3n', 'POST', url, form, 'nonce-123', 'AAAA,5qtQBIbF7YkGENKSI4AGlNAWgloCsHvrDTc25+76ROo=')).toBe(true);
  });

  it('refuses a forged or altered request', () => {
    const url = 'https://example.com/telephony/calls/inbound/plivo?b=1&a=2';
    const good = '5qtQBIbF7YkGENKSI4AGlNAWgloCsHvrDTc25+76ROo=';
    expect(verifyPlivoSignature('other-token', 'POST', url, form, 'nonce-123', good)).toBe(false);
    expect(verifyPlivoSignature('tok3n', 'POST', url, { ...form, To: '+14155550000' }, 'nonce-123', good)).toBe(false);
    expect(verifyPlivoSignature('tok3n', 'POST', url, form, 'nonce-124', good)).toBe(false);
    expect(verifyPlivoSignature('tok3n', 'POST', url, form, null, good)).toBe(false);
    expect(verifyPlivoSignature('tok3n', 'POST', url, form, 'nonce-123', undefined)).toBe(false);
    expect(verifyPlivoSignature('', 'POST', url, form, 'nonce-123', good)).toBe(false);
  });
});

describe('Vonage JWTs', () => {
  const secret = 'vonage-signature-secret-0123456789';
  const body = JSON.stringify({ uuid: 'u-1', status: 'answered' });
  const sign = (claims: Record<string, unknown>, key = secret, alg = 'HS256') =>
    new SignJWT(claims).setProtectedHeader({ alg, typ: 'JWT' }).sign(new TextEncoder().encode(key));
  const hash = (s: string) => createHash('sha256').update(s).digest('hex');
  const now = Math.floor(Date.now() / 1000);

  it('accepts a genuine signed callback', async () => {
    const jwt = await sign({ iat: now, jti: 'j1', iss: 'Vonage', payload_hash: hash(body), api_key: 'abcd1234', application_id: 'app-1' });
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${jwt}`, rawBody: body, applicationId: 'app-1' })).toEqual({ ok: true });
  });

  it('refuses forged, altered, stale or unhashed callbacks', async () => {
    const claims = { iat: now, jti: 'j1', iss: 'Vonage', payload_hash: hash(body), application_id: 'app-1' };
    const forged = await sign(claims, 'not-the-secret-not-the-secret-00');
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${forged}`, rawBody: body }).ok).toBe(false);
    const good = await sign(claims);
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${good}`, rawBody: body.replace('answered', 'completed') }).ok).toBe(false);
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${good}`, rawBody: body, applicationId: 'app-2' }).ok).toBe(false);
    const stale = await sign({ ...claims, iat: now - 3600 });
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${stale}`, rawBody: body }).ok).toBe(false);
    const unhashed = await sign({ iat: now, jti: 'j2' });
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${unhashed}`, rawBody: body }).ok).toBe(false);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.x`;
    expect(verifyVonageCallback({ secret, authorization: `Bearer ${none}`, rawBody: body }).ok).toBe(false);
    expect(verifyVonageCallback({ secret, authorization: undefined, rawBody: body }).ok).toBe(false);
    expect(verifyVonageCallback({ secret: '', authorization: `Bearer ${good}`, rawBody: body }).ok).toBe(false);
  });

  it('signs application JWTs with RS256 and the application id, cached', async () => {
    const { privateKey, publicKey } = generateKeyPairSync('rsa', { modulusLength: 2048, privateKeyEncoding: { type: 'pkcs8', format: 'pem' }, publicKeyEncoding: { type: 'spki', format: 'pem' } });
    const app = { applicationId: 'aaaaaaaa-bbbb-cccc-dddd-0123456789ab', privateKey };
    const t = await appJwt(app);
    expect(decodeProtectedHeader(t)).toMatchObject({ alg: 'RS256', typ: 'JWT' });
    const { payload } = await jwtVerify(t, await importSPKI(publicKey, 'RS256'));
    expect(payload.application_id).toBe(app.applicationId);
    expect(typeof payload.jti).toBe('string');
    expect(payload.exp! - payload.iat!).toBe(900);
    expect(await appJwt(app)).toBe(t);
    // Near its expiry a new one is made.
    expect(decodeJwt(await appJwt(app, Date.now() + 850_000)).jti).not.toBe(payload.jti);
  });
});

describe('Exotel callback authentication', () => {
  it('checks the per-call sig and the applet URL basic auth', () => {
    const sig = exotelCallbackSig('api-token', 'call-1');
    expect(verifyExotelCallbackSig('api-token', 'call-1', sig)).toBe(true);
    expect(verifyExotelCallbackSig('api-token', 'call-2', sig)).toBe(false);
    expect(verifyExotelCallbackSig('other', 'call-1', sig)).toBe(false);
    expect(verifyExotelCallbackSig('api-token', 'call-1', null)).toBe(false);
    const basic = `Basic ${Buffer.from('key:api-token').toString('base64')}`;
    expect(verifyExotelBasicAuth({ apiKey: 'key', apiToken: 'api-token' }, basic)).toBe(true);
    expect(verifyExotelBasicAuth({ apiKey: 'key', apiToken: 'other' }, basic)).toBe(false);
    expect(verifyExotelBasicAuth({ apiKey: 'key', apiToken: 'api-token' }, undefined)).toBe(false);
  });
});
