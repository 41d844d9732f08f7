/** X-Twilio-Signature against Twilio's published vectors, plus the default-port variants. */
import { describe, expect, it } from 'vitest';
import { computeSignature, urlVariants, verifySignature } from '../../../control-plane/telephony/signature.js';

// Twilio's documented example (twilio-node / twilio-csharp RequestValidator tests).
const TOKEN = '12345';
const URL = 'https://mycompany.com/myapp.php?foo=1&bar=2';
const PARAMS = { CallSid: 'CA1234567890ABCDE', Caller: '+14158675309', Digits: '1234', From: '+14158675309', To: '+18005551212' };
const SIGNATURE = 'RSOYDt4T1cUTdK1PDd93/VVr8B8=';

describe('X-Twilio-Signature', () => {
  it("reproduces Twilio's published vector (param order does not matter)", () => {
    expect(computeSignature(TOKEN, URL, PARAMS)).toBe(SIGNATURE);
    const shuffled = { To: PARAMS.To, Digits: PARAMS.Digits, CallSid: PARAMS.CallSid, From: PARAMS.From, Caller: PARAMS.Caller };
    expect(verifySignature(TOKEN, URL, shuffled, SIGNATURE)).toBe(true);
  });

  it('signs every sorted, de-duplicated value of a repeated key', () => {
    const repeated = { Sid: 'CA123', SidAccount: 'AC123', Digits: ['5678', '1234', '1234'] };
    expect(computeSignature(TOKEN, URL, repeated)).toBe('IK+Dwps556ElfBT0I3Rgjkr1wJU=');
  });

  it.each([
    ['a tampered param', URL, { ...PARAMS, Digits: '9999' }, SIGNATURE, TOKEN],
    ['another URL', `${URL}&extra=1`, PARAMS, SIGNATURE, TOKEN],
    ['another token', URL, PARAMS, SIGNATURE, 'other'],
    ['a garbage signature', URL, PARAMS, 'invalid 王', TOKEN],
    ['an empty signature', URL, PARAMS, '', TOKEN],
  ])('rejects %s', (_name, url, params, sig, token) => {
    expect(verifySignature(token, url, params, sig)).toBe(false);
  });

  it('accepts the URL with and without the default port', () => {
    const sigNoPort = computeSignature(TOKEN, 'https://example.com/api/v1/telephony/calls/inbound', PARAMS);
    const sigPort = computeSignature(TOKEN, 'https://example.com:443/api/v1/telephony/calls/inbound', PARAMS);
    expect(verifySignature(TOKEN, 'https://example.com:443/api/v1/telephony/calls/inbound', PARAMS, sigNoPort)).toBe(true);
    expect(verifySignature(TOKEN, 'https://example.com/api/v1/telephony/calls/inbound', PARAMS, sigPort)).toBe(true);
    expect(verifySignature(TOKEN, 'http://example.com/x', PARAMS, computeSignature(TOKEN, 'http://example.com:80/x', PARAMS))).toBe(true);
    // A non-default port is part of the URL: no variant.
    expect(urlVariants('http://127.0.0.1:8080/x')).toEqual(['http://127.0.0.1:8080/x']);
    expect(urlVariants('https://example.com/a?b=1')).toEqual(['https://example.com/a?b=1', 'https://example.com:443/a?b=1']);
  });
});
