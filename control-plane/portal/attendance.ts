/**
 * Attendance per agent per UTC day (spec doc 3, "Attendance rules"), computed from presence
 * sessions and status spans, never stored (so a late correction, e.g. the sweep closing a dead
 * socket at its last heartbeat, is reflected at once).
 *
 * - Time is credited to every day a session or span covers (a session that began before the
 *   range counts on the days of the range it covers); `first_login` and `session_count` stay with
 *   the day of the actual login; a session still open counts up to `now`.
 * - Shift adherence, on a day with a shift (docs/portal.md "Adherence"): the shift's local wall
 *   times on that calendar date in its time zone give the scheduled window. `late_login_seconds`:
 *   scheduled start to the first login inside the window (0 when already online at the start; the
 *   elapsed part, or the whole shift once over, when nobody logged in). `early_logout_seconds`:
 *   last logout inside the window to scheduled end (0 while online at the end or before the end
 *   has come). `shift_adherence_pct`: online time inside the window over the window's elapsed
 *   part, one decimal; absent before the shift starts.
 * - Which windows are judged at all (`judgedWindows`): only those starting at or after
 *   max(shift created_at, agent created_at). The same rule gates `late_login` (presence.ts) and
 *   `missed_shift` (sweep.ts), so a read, an alert and the sweep never disagree about a window.
 */
import { createHash } from 'node:crypto';
import { DAY_MS, dayString, overlapMs, parseTime, zonedToUtc } from './time.js';

export const STATUSES = ['available', 'busy', 'on_call', 'wrap_up', 'break', 'offline'] as const;
export type PresenceStatus = (typeof STATUSES)[number];

export interface SessionIn {
  agent_id: string;
  started_at: Date;
  ended_at: Date | null;
}
export interface SpanIn {
  agent_id: string;
  status: string;
  started_at: Date;
  ended_at: Date | null;
}
export interface ShiftTimes {
  agent_id: string;
  day_of_week: number;
  shift_start: string;
  shift_end: string;
  timezone: string;
}
export interface ShiftIn extends ShiftTimes {
  /** When the shift came to exist (a revived shift: when it was re-posted); see `judgedWindows`. */
  created_at: Date;
}
export interface AgentIn {
  id: string;
  display_name: string;
  agent_code: string;
  created_at: Date;
}

export interface AttendanceRow {
  id: string;
  agent_id: string;
  display_name: string;
  agent_code: string;
  date: string;
  online_seconds: number;
  available_seconds: number;
  busy_seconds: number;
  on_call_seconds: number;
  wrap_up_seconds: number;
  break_seconds: number;
  session_count: number;
  break_count: number;
  first_login?: string;
  last_logout?: string;
  scheduled_start?: string;
  scheduled_end?: string;
  late_login_seconds?: number;
  early_logout_seconds?: number;
  shift_adherence_pct?: number;
}

export interface Window {
  start: number;
  end: number;
}

/**
 * Scheduled windows of an agent's shifts that start on UTC calendar date `dayMs` (overnight shifts
 * end the next day). `day_of_week` and the times are the shift's own, in its time zone: a Tuesday
 * 08:00 shift in Tokyo starts on Monday UTC, a Monday 20:00 shift in Los Angeles on Tuesday UTC.
 * So the local dates either side of the UTC date are looked at too, and a window belongs to the
 * UTC date it starts on (the attendance row, the sweep and the login check all ask by UTC date).
 */
export function shiftWindows(shifts: ShiftTimes[], dayMs: number): Window[] {
  const out: Window[] = [];
  for (const s of shifts) {
    const startMin = parseTime('shift_start', s.shift_start);
    const endMin = parseTime('shift_end', s.shift_end);
    for (const local of [dayMs - DAY_MS, dayMs, dayMs + DAY_MS]) {
      if (new Date(local).getUTCDay() !== s.day_of_week) continue;
      const start = zonedToUtc(local, startMin, s.timezone);
      if (start < dayMs || start >= dayMs + DAY_MS) continue;
      out.push({ start, end: zonedToUtc(endMin > startMin ? local : local + DAY_MS, endMin, s.timezone) });
    }
  }
  return out.sort((a, b) => a.start - b.start);
}

/**
 * The windows of `shiftWindows` that are judged (adherence, `late_login`, `missed_shift`): those
 * starting at or after max(the shift's `created_at`, the agent's `created_at`), and overlapping no
 * period when the agent was deactivated (a window cut by a deactivation or a reactivation is not
 * judged either, for the reason below). Nobody can be late
 * for, or absent from, a window that began before the schedule (or the person) existed: without
 * this a shift posted today made every earlier same-weekday date of an attendance read a whole
 * shift late at 0 % adherence, and a shift posted minutes after its start time raised `late_login`
 * at once. A window already running when the shift is posted is not judged either (rather than
 * judged from the posting instant): the agent was never told to be there at its start, and a
 * partial window would make adherence and lateness mean something different on that one day.
 */
export function judgedWindows(shifts: ShiftIn[], dayMs: number, agentCreatedAt: Date, inactive: readonly InactivePeriod[] = []): Window[] {
  return shifts
    .flatMap((s) => {
      const from = Math.max(s.created_at.getTime(), agentCreatedAt.getTime());
      return shiftWindows([s], dayMs).filter((w) => w.start >= from && !inactive.some((p) => overlaps(p, w)));
    })
    .sort((a, b) => a.start - b.start);
}

/** A span when the agent was deactivated (`ended_at` null: still inactive). Migration 0025. */
export interface InactivePeriod {
  started_at: Date;
  ended_at: Date | null;
}

function overlaps(p: InactivePeriod, w: Window): boolean {
  return p.started_at.getTime() < w.end && (p.ended_at === null || p.ended_at.getTime() > w.start);
}

export interface Adherence {
  late_login_seconds: number;
  early_logout_seconds: number;
  shift_adherence_pct?: number;
}

/** Adherence of closed/open sessions (`[start, end ?? now]`) against one scheduled window. */
export function adherence(win: Window, sessions: Array<{ start: number; end: number | null }>, nowMs: number): Adherence {
  const iv = sessions.map((s) => ({ start: s.start, end: s.end ?? nowMs })).filter((s) => s.end > s.start);
  const inWin = iv.filter((s) => s.start < win.end && s.end > win.start);
  let late = 0;
  if (!inWin.some((s) => s.start <= win.start)) {
    const first = Math.min(...inWin.map((s) => s.start));
    late = Number.isFinite(first) ? first - win.start : Math.max(0, Math.min(nowMs, win.end) - win.start);
  }
  let early = 0;
  if (nowMs >= win.end && inWin.length && !inWin.some((s) => s.end >= win.end)) {
    early = win.end - Math.max(...inWin.map((s) => s.end));
  }
  const elapsed = Math.min(nowMs, win.end) - win.start;
  const out: Adherence = { late_login_seconds: Math.round(Math.max(0, late) / 1000), early_logout_seconds: Math.round(Math.max(0, early) / 1000) };
  if (elapsed > 0) {
    const online = unionOverlap(inWin, win.start, Math.min(nowMs, win.end));
    out.shift_adherence_pct = Math.round((online / elapsed) * 1000) / 10;
  }
  return out;
}

/** Time covered by the union of intervals inside [from, to) (sessions never overlap, but be safe). */
function unionOverlap(iv: Window[], from: number, to: number): number {
  const sorted = iv.map((s) => ({ start: Math.max(s.start, from), end: Math.min(s.end, to) })).filter((s) => s.end > s.start).sort((a, b) => a.start - b.start);
  let total = 0;
  let cursor = from;
  for (const s of sorted) {
    const start = Math.max(s.start, cursor);
    if (s.end > start) total += s.end - start;
    cursor = Math.max(cursor, s.end);
  }
  return total;
}

/** Rows for every agent and day of `[fromMs, toMs]` with presence time, a login or a judged shift window. */
export function computeAttendance(input: {
  agents: AgentIn[];
  sessions: SessionIn[];
  spans: SpanIn[];
  shifts: ShiftIn[];
  inactive?: Array<InactivePeriod & { agent_id: string }>;
  fromMs: number;
  toMs: number;
  nowMs: number;
}): AttendanceRow[] {
  const { nowMs } = input;
  const rows: AttendanceRow[] = [];
  for (const agent of input.agents) {
    const sessions = input.sessions.filter((s) => s.agent_id === agent.id).map((s) => ({ start: s.started_at.getTime(), end: s.ended_at?.getTime() ?? null }));
    const spans = input.spans.filter((s) => s.agent_id === agent.id);
    const shifts = input.shifts.filter((s) => s.agent_id === agent.id);
    const inactive = (input.inactive ?? []).filter((p) => p.agent_id === agent.id);
    for (let day = input.fromMs; day <= input.toMs; day += DAY_MS) {
      const dayEnd = Math.min(day + DAY_MS, nowMs);
      const row = emptyRow(agent, day);
      for (const s of sessions) {
        row.online_seconds += overlapMs(s.start, s.end ?? nowMs, day, dayEnd);
        if (s.start >= day && s.start < day + DAY_MS) {
          row.session_count++;
          if (!row.first_login || s.start < Date.parse(row.first_login)) row.first_login = new Date(s.start).toISOString();
        }
        if (s.end !== null && s.end >= day && s.end < day + DAY_MS && (!row.last_logout || s.end > Date.parse(row.last_logout))) row.last_logout = new Date(s.end).toISOString();
      }
      for (const sp of spans) {
        const start = sp.started_at.getTime();
        const ms = overlapMs(start, sp.ended_at?.getTime() ?? nowMs, day, dayEnd);
        const key = `${sp.status}_seconds` as keyof AttendanceRow;
        if (sp.status !== 'offline' && key in row) (row[key] as number) += ms;
        if (sp.status === 'break' && start >= day && start < day + DAY_MS) row.break_count++;
      }
      for (const k of ['online_seconds', 'available_seconds', 'busy_seconds', 'on_call_seconds', 'wrap_up_seconds', 'break_seconds'] as const) row[k] = Math.round(row[k] / 1000);
      const windows = judgedWindows(shifts, day, agent.created_at, inactive);
      if (windows.length) {
        row.scheduled_start = new Date(windows[0].start).toISOString();
        row.scheduled_end = new Date(windows[windows.length - 1].end).toISOString();
        // Several shifts on one day: lateness of the first, early leave of the last, adherence over all.
        const all = windows.map((w) => adherence(w, sessions, nowMs));
        row.late_login_seconds = all[0].late_login_seconds;
        row.early_logout_seconds = all[all.length - 1].early_logout_seconds;
        const started = windows.map((w, i) => ({ elapsed: Math.max(0, Math.min(nowMs, w.end) - w.start), pct: all[i].shift_adherence_pct })).filter((x) => x.elapsed > 0);
        const total = started.reduce((a, x) => a + x.elapsed, 0);
        if (total > 0) row.shift_adherence_pct = Math.round(started.reduce((a, x) => a + (x.pct ?? 0) * x.elapsed, 0) / total * 10) / 10;
      }
      if (row.online_seconds > 0 || row.session_count > 0 || windows.length) rows.push(row);
    }
  }
  return rows;
}

function emptyRow(agent: AgentIn, dayMs: number): AttendanceRow {
  const date = dayString(dayMs);
  const h = createHash('sha1').update(`${agent.id}:${date}`).digest('hex');
  return {
    // Stable per agent and day: the same row has the same id on every read.
    id: `${h.slice(0, 8)}-${h.slice(8, 12)}-5${h.slice(13, 16)}-8${h.slice(17, 20)}-${h.slice(20, 32)}`,
    agent_id: agent.id,
    display_name: agent.display_name,
    agent_code: agent.agent_code,
    date,
    online_seconds: 0,
    available_seconds: 0,
    busy_seconds: 0,
    on_call_seconds: 0,
    wrap_up_seconds: 0,
    break_seconds: 0,
    session_count: 0,
    break_count: 0,
  };
}
