/** Carrier detection from account ids and the live-call status mapping. */
import { describe, expect, it } from 'vitest';
import { detectCarrier } from '../../../control-plane/telephony/carriers.js';
import { advances, mapCarrierStatus } from '../../../control-plane/telephony/live-calls.js';
import { seatLimit } from '../../../control-plane/telephony/inbound.js';

describe('carrier detection', () => {
  it.each([
    ['AC0123456789abcdef0123456789abcdef', 'twilio'],
    ['MAXXXXXXXXXXXXXXXXXX', 'plivo'],
    ['SA0123456789ABCDEFGH', 'plivo'],
    ['1b2c3d4e-0000-4000-8000-123456789abc', 'signalwire'],
    ['KEY0123ABC_xyz', 'telnyx'],
    ['a1b2c3d4', 'vonage'],
    ['my-exotel-sid', 'twilio'],
    ['', undefined],
  ])('%s -> %s', (sid, carrier) => {
    expect(detectCarrier(sid)).toBe(carrier);
  });
});

describe('carrier call status', () => {
  it.each([
    ['queued', 'initiated'],
    ['initiated', 'initiated'],
    ['ringing', 'ringing'],
    ['in-progress', 'in_progress'],
    ['answered', 'in_progress'],
    ['completed', 'ended'],
    ['busy', 'ended'],
    ['no-answer', 'ended'],
    ['failed', 'ended'],
    ['canceled', 'ended'],
    ['whatever', undefined],
  ])('%s -> %s', (carrier, ours) => {
    expect(mapCarrierStatus(carrier)).toBe(ours);
  });

  it('never moves a call backwards (callbacks arrive out of order)', () => {
    expect(advances('initiated', 'ringing')).toBe(true);
    expect(advances('ringing', 'in_progress')).toBe(true);
    expect(advances('in_progress', 'ringing')).toBe(false);
    expect(advances('ringing', 'ringing')).toBe(false);
  });

  it.each([
    [{}, 0],
    [{ max_concurrent_calls: 3 }, 3],
    [{ max_concurrent_calls: '2' }, 2],
    [{ max_concurrent_calls: 0 }, 0],
    [{ max_concurrent_calls: -1 }, 0],
    [{ max_concurrent_calls: 1.5 }, 0],
  ])('seat limit of metadata %j is %i', (metadata, n) => {
    expect(seatLimit({ metadata } as never)).toBe(n);
  });
});
