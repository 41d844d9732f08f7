import { describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../../shared/clock.js';
import { addressKey, SocketAdmission } from '../../../media-engine/transports/socket-admission.js';

describe('socket admission', () => {
  it('caps open sockets per node and per address; a release gives the slot back', () => {
    const a = new SocketAdmission(3, 2, new SimulatedClock(), { burst: 100, perSecond: 100 });
    expect([a.admit('1.1.1.1'), a.admit('1.1.1.1'), a.admit('1.1.1.1')]).toEqual(['ok', 'ok', 'address_full']);
    expect(a.admit('2.2.2.2')).toBe('ok');
    expect(a.admit('3.3.3.3')).toBe('node_full');
    a.release('1.1.1.1');
    expect(a.admit('3.3.3.3')).toBe('ok');
    expect([a.count, a.refusedTotal]).toEqual([3, 2]);
  });

  it('bounds how fast one address opens sockets (a churning client), whatever it closes meanwhile', () => {
    const clock = new SimulatedClock();
    const a = new SocketAdmission(1000, 1000, clock, { burst: 5, perSecond: 10 });
    const churn = () => {
      const v = a.admit('9.9.9.9');
      if (v === 'ok') a.release('9.9.9.9');
      return v;
    };
    expect(Array.from({ length: 6 }, churn)).toEqual(['ok', 'ok', 'ok', 'ok', 'ok', 'address_rate']);
    // Another address is not affected.
    expect(a.admit('8.8.8.8')).toBe('ok');
    clock.advance(100); // one token back at 10 a second
    expect([churn(), churn()]).toEqual(['ok', 'address_rate']);
    clock.advance(10_000);
    expect(Array.from({ length: 5 }, churn).every((v) => v === 'ok')).toBe(true);
  });

  it('counts an IPv4-mapped address as IPv4 and an IPv6 client by its /64', () => {
    expect(addressKey('::ffff:10.0.0.7')).toBe('10.0.0.7');
    expect(addressKey('2001:db8:1:2:aaaa::1')).toBe(addressKey('2001:db8:1:2:bbbb::9'));
  });
});
