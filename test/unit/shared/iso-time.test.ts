import { describe, expect, it } from 'vitest';
import { isoNow, isoOf, isoTime } from '../../../shared/iso-time.js';

describe('isoTime', () => {
  it('formats known instants exactly as toISOString', () => {
    const vectors: Array<[number, string]> = [
      [0, '1970-01-01T00:00:00.000Z'],
      [951_782_400_000, '2000-02-29T00:00:00.000Z'], // a leap day in a year divisible by 400
      [946_684_799_999, '1999-12-31T23:59:59.999Z'],
      [Date.UTC(2100, 2, 1), '2100-03-01T00:00:00.000Z'], // 2100 is not a leap year
      [Date.UTC(2026, 10, 29, 17, 4, 28, 123), '2026-11-29T17:04:28.123Z'],
      [Date.UTC(1000, 0, 1), '1000-01-01T00:00:00.000Z'],
      [Date.UTC(9999, 11, 31, 23, 59, 59, 999), '9999-12-31T23:59:59.999Z'],
      [-1, '1969-12-31T23:59:59.999Z'],
    ];
    for (const [ms, text] of vectors) expect(isoTime(ms), String(ms)).toBe(text);
  });

  it('agrees with toISOString on 200,000 random instants between the years 1000 and 9999', () => {
    let seed = 12345;
    const next = () => (seed = (Math.imul(seed, 1_103_515_245) + 12_345) >>> 0) / 2 ** 32;
    const lo = Date.UTC(1000, 0, 1);
    const hi = Date.UTC(10_000, 0, 1) - 1;
    for (let i = 0; i < 200_000; i++) {
      const ms = Math.floor(lo + next() * (hi - lo));
      const want = new Date(ms).toISOString();
      if (isoTime(ms) !== want) expect(isoTime(ms), String(ms)).toBe(want);
    }
  });

  it('hands the shapes toISOString changes (years past 9999, before 1000, fractions) over to it', () => {
    for (const ms of [Date.UTC(10_000, 0, 1), Date.UTC(999, 11, 31), 8.64e15, -8.64e15, 1.5]) expect(isoTime(ms)).toBe(new Date(ms).toISOString());
    expect(() => isoTime(Number.NaN)).toThrow(RangeError);
  });
});

describe('isoOf and isoNow', () => {
  it('reads Dates and the text form of json_agg rows; missing is empty', () => {
    expect(isoOf(new Date(Date.UTC(2026, 0, 2, 3, 4, 5, 6)))).toBe('2026-01-02T03:04:05.006Z');
    expect(isoOf('2026-01-02T03:04:05.006+00:00')).toBe('2026-01-02T03:04:05.006Z');
    expect(isoOf('2026-01-02 04:04:05.006+01')).toBe('2026-01-02T03:04:05.006Z');
    for (const missing of [null, undefined, '']) expect(isoOf(missing)).toBe('');
  });

  it('isoNow is the wall clock', () => {
    const before = Date.now();
    const now = Date.parse(isoNow());
    expect(now).toBeGreaterThanOrEqual(before);
    expect(now).toBeLessThanOrEqual(Date.now());
  });
});
