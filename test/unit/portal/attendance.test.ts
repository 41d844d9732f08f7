/** Portal calendar and adherence rules (control-plane/portal/time.ts, attendance.ts): DST edges, overnight shifts, missed shifts. */
import { describe, expect, it } from 'vitest';
import { adherence, computeAttendance, shiftWindows } from '../../../control-plane/portal/attendance.js';
import { dayRange, parseDay, zonedToUtc } from '../../../control-plane/portal/time.js';

const D = (s: string) => Date.parse(s);

describe('time', () => {
  it('converts local wall times across DST in Europe/Berlin', () => {
    expect(new Date(zonedToUtc(parseDay('2026-01-15')!, 9 * 60, 'Europe/Berlin')).toISOString()).toBe('2026-01-15T08:00:00.000Z');
    expect(new Date(zonedToUtc(parseDay('2026-07-15')!, 9 * 60, 'Europe/Berlin')).toISOString()).toBe('2026-07-15T07:00:00.000Z');
    // The morning after the spring change (29 March 2026).
    expect(new Date(zonedToUtc(parseDay('2026-03-29')!, 9 * 60, 'Europe/Berlin')).toISOString()).toBe('2026-03-29T07:00:00.000Z');
    expect(new Date(zonedToUtc(parseDay('2026-03-28')!, 9 * 60, 'America/New_York')).toISOString()).toBe('2026-03-28T13:00:00.000Z');
  });

  it('refuses impossible dates and reversed ranges with INVALID_PARAM', () => {
    expect(parseDay('2026-02-30')).toBeUndefined();
    // Its day after (the end of a range) would be year 10000: no Postgres timestamp (was a 500).
    expect(parseDay('9999-12-31')).toBeUndefined();
    expect(parseDay('1969-12-31')).toBeUndefined();
    expect(parseDay('9998-12-31')).toBe(Date.UTC(9998, 11, 31));
    expect(() => dayRange('9999-12-31', '9999-12-31', 0, 62)).toThrow(expect.objectContaining({ code: 'INVALID_PARAM' }));
    expect(() => dayRange('2026-02-30', '', 0, 62)).toThrow(expect.objectContaining({ code: 'INVALID_PARAM' }));
    expect(() => dayRange('2026-03-02', '2026-03-01', 0, 62)).toThrow(expect.objectContaining({ code: 'INVALID_PARAM' }));
    expect(() => dayRange('2026-01-01', '2026-12-31', 0, 62)).toThrow(expect.objectContaining({ code: 'INVALID_PARAM' }));
    expect(dayRange('', '', D('2026-05-05T13:00:00Z'), 62)).toEqual({ fromMs: D('2026-05-05T00:00:00Z'), toMs: D('2026-05-05T00:00:00Z') });
  });
});

describe('shift adherence', () => {
  const shift = { agent_id: 'a', day_of_week: 2, shift_start: '22:00', shift_end: '06:00', timezone: 'UTC' };

  it('an overnight shift ends the next day', () => {
    expect(shiftWindows([shift], D('2026-11-24T00:00:00Z'))).toEqual([{ start: D('2026-11-24T22:00:00Z'), end: D('2026-11-25T06:00:00Z') }]);
    expect(shiftWindows([shift], D('2026-11-25T00:00:00Z'))).toEqual([]);
  });

  it('already online at the start: not late; online at the end: not early', () => {
    const win = { start: D('2026-11-24T08:00:00Z'), end: D('2026-11-24T16:00:00Z') };
    const a = adherence(win, [{ start: D('2026-11-24T07:50:00Z'), end: D('2026-11-24T16:10:00Z') }], D('2026-11-24T20:00:00Z'));
    expect(a).toEqual({ late_login_seconds: 0, early_logout_seconds: 0, shift_adherence_pct: 100 });
  });

  it('a missed shift is late by its whole length once over, by the elapsed part while running', () => {
    const win = { start: D('2026-11-24T08:00:00Z'), end: D('2026-11-24T16:00:00Z') };
    expect(adherence(win, [], D('2026-11-24T20:00:00Z'))).toEqual({ late_login_seconds: 8 * 3600, early_logout_seconds: 0, shift_adherence_pct: 0 });
    expect(adherence(win, [], D('2026-11-24T09:00:00Z'))).toEqual({ late_login_seconds: 3600, early_logout_seconds: 0, shift_adherence_pct: 0 });
    expect(adherence(win, [], D('2026-11-24T07:00:00Z'))).toEqual({ late_login_seconds: 0, early_logout_seconds: 0 });
  });

  it('an open session counts to now and is not an early logout', () => {
    const rows = computeAttendance({
      agents: [{ id: 'a', display_name: 'A', agent_code: 'a' }],
      sessions: [{ agent_id: 'a', started_at: new Date('2026-11-24T08:30:00Z'), ended_at: null }],
      spans: [{ agent_id: 'a', status: 'available', started_at: new Date('2026-11-24T08:30:00Z'), ended_at: null }],
      shifts: [{ agent_id: 'a', day_of_week: 2, shift_start: '08:00', shift_end: '16:00', timezone: 'UTC' }],
      fromMs: D('2026-11-24T00:00:00Z'),
      toMs: D('2026-11-24T00:00:00Z'),
      nowMs: D('2026-11-24T12:00:00Z'),
    });
    expect(rows[0]).toMatchObject({ online_seconds: 3.5 * 3600, available_seconds: 3.5 * 3600, late_login_seconds: 1800, early_logout_seconds: 0, shift_adherence_pct: 87.5 });
  });
});
