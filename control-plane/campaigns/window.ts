/**
 * Calling hours (spec doc 2, create fields and rule 1-2): `HH:MM` start and end in an IANA
 * timezone; an end before the start crosses midnight; both empty means around the clock. All
 * zone maths is luxon's (never hand-written offsets), so DST changes move the window with the
 * wall clock: a 21:00-08:00 window in America/New_York opens at 21:00 local on both sides of a
 * change, whatever the UTC offset. Pure: `nowMs` comes from the caller's injected clock.
 */
import { DateTime, IANAZone } from 'luxon';
import type { FieldProblem } from '../../shared/errors.js';

export interface WindowFields {
  calling_hours_start?: string | null;
  calling_hours_end?: string | null;
  timezone?: string | null;
}

export type CallingWindow =
  | { kind: 'always' }
  | { kind: 'hours'; startMin: number; endMin: number; zone: string }
  /** A stored window that cannot be interpreted: the dialer holds (rule 1). */
  | { kind: 'invalid'; problem: FieldProblem };

const HHMM = /^([01]\d|2[0-3]):([0-5]\d)$/;

function minutesOf(v: string): number | undefined {
  const m = HHMM.exec(v);
  return m ? Number(m[1]) * 60 + Number(m[2]) : undefined;
}

const blank = (v: string | null | undefined): boolean => v === undefined || v === null || v.trim() === '';

/** Interprets the three fields; `invalid` names the first field at fault. */
export function windowOf(f: WindowFields): CallingWindow {
  const bad = (field: string, problem: string): CallingWindow => ({ kind: 'invalid', problem: { field, problem } });
  const tz = blank(f.timezone) ? undefined : f.timezone!.trim();
  if (tz !== undefined && !IANAZone.isValidZone(tz)) return bad('timezone', `unknown IANA timezone ${JSON.stringify(tz)}`);
  const hasStart = !blank(f.calling_hours_start);
  const hasEnd = !blank(f.calling_hours_end);
  if (!hasStart && !hasEnd) return { kind: 'always' };
  if (!hasStart) return bad('calling_hours_start', 'is required when calling_hours_end is set');
  if (!hasEnd) return bad('calling_hours_end', 'is required when calling_hours_start is set');
  const startMin = minutesOf(f.calling_hours_start!.trim());
  if (startMin === undefined) return bad('calling_hours_start', 'must be HH:MM (00:00 to 23:59)');
  const endMin = minutesOf(f.calling_hours_end!.trim());
  if (endMin === undefined) return bad('calling_hours_end', 'must be HH:MM (00:00 to 23:59)');
  if (startMin === endMin) return bad('calling_hours_end', 'must differ from calling_hours_start');
  if (tz === undefined) return bad('timezone', 'is required when calling hours are set');
  return { kind: 'hours', startMin, endMin, zone: tz };
}

/** Whether a call may start at `nowMs`. An invalid window never opens. */
export function isOpen(w: CallingWindow, nowMs: number): boolean {
  if (w.kind === 'always') return true;
  if (w.kind === 'invalid') return false;
  const local = DateTime.fromMillis(nowMs, { zone: w.zone });
  const m = local.hour * 60 + local.minute;
  // start < end: a daytime window; start > end: it crosses midnight.
  return w.startMin < w.endMin ? m >= w.startMin && m < w.endMin : m >= w.startMin || m < w.endMin;
}

/**
 * The first instant at or after `nowMs` when the window is open (`nowMs` itself when open;
 * undefined for an invalid window). The opening is the wall-clock start time in the zone: on a
 * spring-forward day a start inside the skipped hour opens at the first valid instant after it.
 */
export function nextOpenMs(w: CallingWindow, nowMs: number): number | undefined {
  if (w.kind === 'invalid') return undefined;
  if (isOpen(w, nowMs)) return nowMs;
  if (w.kind !== 'hours') return nowMs;
  const at = (day: DateTime) => day.set({ hour: Math.floor(w.startMin / 60), minute: w.startMin % 60, second: 0, millisecond: 0 });
  const today = DateTime.fromMillis(nowMs, { zone: w.zone });
  let open = at(today);
  if (open.toMillis() <= nowMs) open = at(today.plus({ days: 1 }));
  return open.toMillis();
}
