/** Portal calendar and adherence rules (control-plane/portal/time.ts, attendance.ts): DST edges, overnight shifts, missed shifts. */
import { describe, expect, it } from 'vitest';
import { adherence, computeAttendance, judgedWindows, shiftWindows } from '../../../control-plane/portal/attendance.js';
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

  it('`to` defaults to today (the spec): a `from` alone runs to today, a future one is that day alone', () => {
    const now = D('2026-12-01T10:00:00Z');
    expect(dayRange('2026-11-30', '', now, 62)).toEqual({ fromMs: D('2026-11-30T00:00:00Z'), toMs: D('2026-12-01T00:00:00Z') });
    expect(dayRange('2026-12-03', '', now, 62)).toEqual({ fromMs: D('2026-12-03T00:00:00Z'), toMs: D('2026-12-03T00:00:00Z') });
    // Too far back for one request without `to`: the `from` the caller sent is named.
    expect(() => dayRange('2026-01-01', '', now, 62)).toThrow(expect.objectContaining({ code: 'INVALID_PARAM', details: [expect.objectContaining({ field: 'from' })] }));
  });
});

describe('shift adherence', () => {
  const shift = { agent_id: 'a', day_of_week: 2, shift_start: '22:00', shift_end: '06:00', timezone: 'UTC' };

  it('an overnight shift ends the next day', () => {
    expect(shiftWindows([shift], D('2026-11-24T00:00:00Z'))).toEqual([{ start: D('2026-11-24T22:00:00Z'), end: D('2026-11-25T06:00:00Z') }]);
    expect(shiftWindows([shift], D('2026-11-25T00:00:00Z'))).toEqual([]);
  });

  it('a shift whose local weekday is another UTC day belongs to the UTC day it starts on', () => {
    // Tuesday 08:00 in Tokyo (UTC+9) is Monday 23:00 UTC; Tuesday 03:37 at UTC+14 is Monday 13:37 UTC.
    const tokyo = { agent_id: 'a', day_of_week: 2, shift_start: '08:00', shift_end: '17:00', timezone: 'Asia/Tokyo' };
    expect(shiftWindows([tokyo], D('2026-11-23T00:00:00Z'))).toEqual([{ start: D('2026-11-23T23:00:00Z'), end: D('2026-11-24T08:00:00Z') }]);
    expect(shiftWindows([tokyo], D('2026-11-24T00:00:00Z'))).toEqual([]);
    const kiritimati = { ...tokyo, shift_start: '03:37', shift_end: '03:38', timezone: 'Pacific/Kiritimati' };
    expect(shiftWindows([kiritimati], D('2026-11-23T00:00:00Z'))).toEqual([{ start: D('2026-11-23T13:37:00Z'), end: D('2026-11-23T13:38:00Z') }]);
    // Monday 20:00 in Los Angeles (UTC-8) is Tuesday 04:00 UTC.
    const la = { agent_id: 'a', day_of_week: 1, shift_start: '20:00', shift_end: '23:00', timezone: 'America/Los_Angeles' };
    expect(shiftWindows([la], D('2026-11-23T00:00:00Z'))).toEqual([]);
    expect(shiftWindows([la], D('2026-11-24T00:00:00Z'))).toEqual([{ start: D('2026-11-24T04:00:00Z'), end: D('2026-11-24T07:00:00Z') }]);
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
      agents: [{ id: 'a', display_name: 'A', agent_code: 'a', created_at: new Date('2026-11-01T00:00:00Z') }],
      sessions: [{ agent_id: 'a', started_at: new Date('2026-11-24T08:30:00Z'), ended_at: null }],
      spans: [{ agent_id: 'a', status: 'available', started_at: new Date('2026-11-24T08:30:00Z'), ended_at: null }],
      shifts: [{ agent_id: 'a', day_of_week: 2, shift_start: '08:00', shift_end: '16:00', timezone: 'UTC', created_at: new Date('2026-11-01T00:00:00Z') }],
      fromMs: D('2026-11-24T00:00:00Z'),
      toMs: D('2026-11-24T00:00:00Z'),
      nowMs: D('2026-11-24T12:00:00Z'),
    });
    expect(rows[0]).toMatchObject({ online_seconds: 3.5 * 3600, available_seconds: 3.5 * 3600, late_login_seconds: 1800, early_logout_seconds: 0, shift_adherence_pct: 87.5 });
  });
});

describe('judged windows: only those starting at or after max(shift created_at, agent created_at)', () => {
  // Monday 09:00-17:00 Berlin = 08:00-16:00Z in November.
  const monday = (created: string) => ({ agent_id: 'ann', day_of_week: 1, shift_start: '09:00', shift_end: '17:00', timezone: 'Europe/Berlin', created_at: new Date(created) });
  const ann = (created: string) => ({ id: 'ann', display_name: 'Ann', agent_code: 'ann1', created_at: new Date(created) });

  it('a window before either creation, or already running at it, is not judged; the next one is', () => {
    const mon = D('2026-11-30T00:00:00Z');
    const agentEarly = new Date('2026-01-01T00:00:00Z');
    expect(judgedWindows([monday('2026-11-30T07:59:00Z')], mon, agentEarly)).toEqual([{ start: D('2026-11-30T08:00:00Z'), end: D('2026-11-30T16:00:00Z') }]);
    // Starting exactly at the creation instant counts ("at or after").
    expect(judgedWindows([monday('2026-11-30T08:00:00Z')], mon, agentEarly)).toHaveLength(1);
    expect(judgedWindows([monday('2026-11-30T08:00:01Z')], mon, agentEarly)).toEqual([]);
    expect(judgedWindows([monday('2026-11-30T10:00:00Z')], D('2026-11-23T00:00:00Z'), agentEarly)).toEqual([]);
    expect(judgedWindows([monday('2026-11-30T10:00:00Z')], D('2026-12-07T00:00:00Z'), agentEarly)).toHaveLength(1);
    // The agent's own creation bounds it too (a shift row older than its agent: imported data, clock skew).
    expect(judgedWindows([monday('2026-01-01T00:00:00Z')], mon, new Date('2026-11-30T09:00:00Z'))).toEqual([]);
    expect(judgedWindows([monday('2026-01-01T00:00:00Z')], D('2026-12-07T00:00:00Z'), new Date('2026-11-30T09:00:00Z'))).toHaveLength(1);
  });

  it('each shift by its own creation: of two shifts on one day only the judged one is scheduled', () => {
    const early = { agent_id: 'ann', day_of_week: 1, shift_start: '06:00', shift_end: '07:00', timezone: 'UTC', created_at: new Date('2026-11-30T06:30:00Z') };
    const late = { ...early, shift_start: '12:00', shift_end: '13:00' };
    expect(judgedWindows([late, early], D('2026-11-30T00:00:00Z'), new Date('2026-11-01T00:00:00Z'))).toEqual([{ start: D('2026-11-30T12:00:00Z'), end: D('2026-11-30T13:00:00Z') }]);
  });

  it('the audit case: an agent and a Monday shift created on 2026-11-30 are not absent on the eight Mondays before', () => {
    const input = { agents: [ann('2026-11-30T09:00:00Z')], sessions: [], spans: [], shifts: [monday('2026-11-30T09:05:00Z')] };
    // Read the same day: today's window was already running when it was created, earlier ones before.
    expect(computeAttendance({ ...input, fromMs: D('2026-09-30T00:00:00Z'), toMs: D('2026-11-30T00:00:00Z'), nowMs: D('2026-11-30T18:00:00Z') })).toEqual([]);
    // A week on, the next Monday is judged as any other.
    const rows = computeAttendance({ ...input, fromMs: D('2026-09-30T00:00:00Z'), toMs: D('2026-12-07T00:00:00Z'), nowMs: D('2026-12-07T18:00:00Z') });
    expect(rows.map((r) => [r.date, r.scheduled_start, r.late_login_seconds, r.shift_adherence_pct])).toEqual([['2026-12-07', '2026-12-07T08:00:00.000Z', 28800, 0]]);
  });

  it('a day whose window is not judged keeps its presence time, without scheduled fields', () => {
    const rows = computeAttendance({
      agents: [ann('2026-11-30T06:00:00Z')],
      sessions: [{ agent_id: 'ann', started_at: new Date('2026-11-30T10:00:00Z'), ended_at: new Date('2026-11-30T11:00:00Z') }],
      spans: [],
      shifts: [monday('2026-11-30T09:05:00Z')],
      fromMs: D('2026-11-30T00:00:00Z'),
      toMs: D('2026-11-30T00:00:00Z'),
      nowMs: D('2026-11-30T18:00:00Z'),
    });
    expect(rows).toHaveLength(1);
    expect(rows[0]).toMatchObject({ date: '2026-11-30', online_seconds: 3600, session_count: 1 });
    for (const k of ['scheduled_start', 'scheduled_end', 'late_login_seconds', 'early_logout_seconds', 'shift_adherence_pct']) expect(rows[0]).not.toHaveProperty(k);
  });

  it('a window overlapping a deactivation is not judged; before it and after the reactivation they are', () => {
    const shift = monday('2026-11-01T00:00:00Z');
    const agent = new Date('2026-11-01T00:00:00Z');
    // Deactivated from Monday 2026-11-09 12:00Z (mid-shift) to Tuesday 2026-11-17 (reactivated).
    const period = { started_at: new Date('2026-11-09T12:00:00Z'), ended_at: new Date('2026-11-17T09:00:00Z') };
    const judged = (day: string) => judgedWindows([shift], D(`${day}T00:00:00Z`), agent, [period]).length;
    expect([judged('2026-11-02'), judged('2026-11-09'), judged('2026-11-16'), judged('2026-11-23')]).toEqual([1, 0, 0, 1]);
    // Still inactive: every later window is unjudged.
    expect(judgedWindows([shift], D('2026-11-23T00:00:00Z'), agent, [{ ...period, ended_at: null }])).toEqual([]);
    // A period ending exactly at a window's start (or starting at its end) does not touch it.
    expect(judgedWindows([shift], D('2026-11-16T00:00:00Z'), agent, [{ started_at: new Date('2026-11-10T00:00:00Z'), ended_at: new Date('2026-11-16T08:00:00Z') }])).toHaveLength(1);
    expect(judgedWindows([shift], D('2026-11-16T00:00:00Z'), agent, [{ started_at: new Date('2026-11-16T16:00:00Z'), ended_at: null }])).toHaveLength(1);
  });

  it('the audit case: a deactivated agent has no missed shifts after the deactivation, and keeps its earlier days', () => {
    const rows = computeAttendance({
      agents: [ann('2026-11-01T00:00:00Z')],
      sessions: [{ agent_id: 'ann', started_at: new Date('2026-11-02T08:00:00Z'), ended_at: new Date('2026-11-02T16:00:00Z') }],
      spans: [],
      shifts: [monday('2026-11-01T00:00:00Z')],
      inactive: [{ agent_id: 'ann', started_at: new Date('2026-11-03T10:00:00Z'), ended_at: null }],
      fromMs: D('2026-11-01T00:00:00Z'),
      toMs: D('2026-11-30T00:00:00Z'),
      nowMs: D('2026-11-30T18:00:00Z'),
    });
    expect(rows.map((r) => [r.date, r.shift_adherence_pct])).toEqual([['2026-11-02', 100]]);
  });
});
