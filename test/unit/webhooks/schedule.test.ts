/**
 * The delivery schedule and outcome rules of spec doc 3 ("Delivery rules" 3-4, "Limits") as
 * numbers: waits 30 s, 2 min, 10 min, 30 min with up to 20 % jitter, five attempts, Retry-After on
 * 429/503 capped at 1 h, and which outcomes retry or go dead at once.
 */
import { describe, expect, it } from 'vitest';
import { classify, MAX_ATTEMPTS, nextWaitMs, retryAfterMs, testLimitRetryAfterS } from '../../../control-plane/webhooks/schedule.js';
import { deliveryHeaders, signatureV1 } from '../../../control-plane/webhooks/signing.js';
import { createHmac } from 'node:crypto';

const NOW = Date.parse('2026-11-24T10:00:00.000Z');

describe('TEST_LIMIT Retry-After', () => {
  it('is the earliest un-sent ping\'s due time plus the 10 s attempt timeout, whole seconds, 1 s to 1 h', () => {
    // Due now (or overdue, or in flight since its due time): the attempt under way ends within 10 s.
    expect(testLimitRetryAfterS(NOW, NOW)).toBe(10);
    expect(testLimitRetryAfterS(NOW - 60_000, NOW)).toBe(10);
    expect(testLimitRetryAfterS(null, NOW)).toBe(10);
    // A retry 30.2 s away: 41 s (rounded up).
    expect(testLimitRetryAfterS(NOW + 30_200, NOW)).toBe(41);
    expect(testLimitRetryAfterS(NOW + 5 * 3_600_000, NOW)).toBe(3600);
  });
});

describe('schedule', () => {
  it('waits 30 s, 2 min, 10 min, 30 min after attempts 1-4, then no fifth wait', () => {
    expect([1, 2, 3, 4].map((n) => nextWaitMs(n, { status: 500 }, NOW, 0))).toEqual([30_000, 120_000, 600_000, 1_800_000]);
    expect(nextWaitMs(MAX_ATTEMPTS, { status: 500 }, NOW, 0)).toBeUndefined();
    expect(MAX_ATTEMPTS).toBe(5);
  });

  it('jitter stretches each wait by at most 20 %', () => {
    expect(nextWaitMs(1, { status: 503 }, NOW, 0.999_999)).toBeLessThanOrEqual(36_000);
    expect(nextWaitMs(4, { error: 'timeout' }, NOW, 0.5)).toBe(1_980_000);
  });

  it('Retry-After on 429/503 overrides the schedule (seconds or HTTP date), capped at 1 h; ignored on other codes', () => {
    expect(nextWaitMs(1, { status: 429, retryAfter: '7' }, NOW, 0.9)).toBe(7000);
    expect(nextWaitMs(2, { status: 503, retryAfter: new Date(NOW + 90_000).toUTCString() }, NOW, 0)).toBe(90_000);
    expect(nextWaitMs(1, { status: 429, retryAfter: '86400' }, NOW, 0)).toBe(3_600_000);
    expect(nextWaitMs(1, { status: 500, retryAfter: '7' }, NOW, 0)).toBe(30_000);
    expect(nextWaitMs(1, { status: 429, retryAfter: 'soon' }, NOW, 0)).toBe(30_000);
    expect(retryAfterMs('-3', NOW)).toBeUndefined();
  });

  it('Retry-After shorter than 5 s waits 5 s: "0" or a past date would spend the five attempts in seconds', () => {
    expect(nextWaitMs(1, { status: 429, retryAfter: '0' }, NOW, 0)).toBe(5000);
    expect(nextWaitMs(3, { status: 503, retryAfter: '2' }, NOW, 0)).toBe(5000);
    expect(nextWaitMs(2, { status: 429, retryAfter: new Date(NOW - 60_000).toUTCString() }, NOW, 0)).toBe(5000);
  });
});

describe('classification', () => {
  it('2xx delivered; 408, 425, 429, 5xx and network failures retry; other 4xx and any 3xx dead', () => {
    for (const s of [200, 201, 204, 299]) expect(classify({ status: s })).toBe('delivered');
    for (const s of [408, 425, 429, 500, 502, 503, 504, 599]) expect(classify({ status: s })).toBe('retry');
    for (const s of [301, 302, 307, 308, 400, 401, 403, 404, 410, 422]) expect(classify({ status: s })).toBe('dead');
    expect(classify({ error: 'getaddrinfo ENOTFOUND' })).toBe('retry');
    expect(classify({ error: 'refused', refused: true })).toBe('dead');
  });
});

describe('signature', () => {
  it('is hex HMAC-SHA256 over "<timestamp>.<raw body>" and every header is set', () => {
    const body = '{"id":"e1","type":"call.completed","data":{"summary":"é"}}';
    const h = deliveryHeaders('whsec_k', 'e1', 1_700_000_000, body);
    const expected = createHmac('sha256', 'whsec_k').update(`1700000000.${body}`).digest('hex');
    expect(signatureV1('whsec_k', 1_700_000_000, body)).toBe(expected);
    expect(h).toMatchObject({
      'webhook-signature': `t=1700000000,v1=${expected}`,
      'webhook-timestamp': '1700000000',
      'webhook-id': 'e1',
      'idempotency-key': 'e1',
      'webhook-event-type': 'call.completed',
    });
  });
});
