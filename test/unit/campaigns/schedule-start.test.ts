/**
 * `schedule_start` (create and PATCH, validate.ts): an ISO 8601 date and time that exists. Date.parse
 * rolls impossible values over (2030-02-30 became 2030-03-02, T24:00 the next midnight), so a
 * campaign started on a day nobody chose; they are refused naming the field.
 */
import { describe, expect, it } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { defaultConfig, mergeConfig } from '../../../control-plane/campaigns/validate.js';

const parse = (schedule_start: string) => mergeConfig(defaultConfig(), { schedule_start }).schedule_start;

describe('schedule_start', () => {
  it.each([
    '2030-02-30T10:00:00Z',
    '2029-02-29T10:00:00Z',
    '2100-02-29T10:00:00Z',
    '2030-04-31T10:00:00Z',
    '2030-06-31T10:00:00+02:00',
    '2030-13-01T10:00:00Z',
    '2030-00-10T10:00:00Z',
    '2030-01-00T10:00:00Z',
    '2030-01-01T24:00:00Z',
    '2030-01-01T23:60:00Z',
    '2030-01-01T23:59:60Z',
    '2030-01-01',
    'tomorrow',
  ])('refuses %s with 400 INVALID_REQUEST naming schedule_start', (v) => {
    let err: unknown;
    try {
      parse(v);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(AppError);
    expect((err as AppError).code).toBe('INVALID_REQUEST');
    expect((err as AppError).details).toEqual([{ field: 'schedule_start', problem: expect.any(String) }]);
  });

  it.each([
    ['2028-02-29T10:00:00Z', '2028-02-29T10:00:00.000Z'],
    ['2000-02-29T00:00:00Z', '2000-02-29T00:00:00.000Z'],
    ['2030-04-30T23:59:59.999Z', '2030-04-30T23:59:59.999Z'],
    ['2030-12-31T23:30:00-05:00', '2031-01-01T04:30:00.000Z'],
    ['2030-01-01T00:00:00+01:00', '2029-12-31T23:00:00.000Z'],
  ])('accepts %s as %s', (v, stored) => {
    expect(parse(v)).toBe(stored);
  });

  it('empty clears it', () => {
    expect(parse('  ')).toBeNull();
  });
});
