/**
 * Calendar helpers of the portal: UTC days (`YYYY-MM-DD`), `HH:MM` shift times and IANA time
 * zones through Intl only (no dependency): a shift's local start on a date becomes a UTC instant
 * by asking Intl for the zone's offset at that instant (twice, so DST edges land right).
 */
import { invalid, AppError } from '../../shared/errors.js';
import { MAX_YEAR, MIN_YEAR } from '../http/validate.js';

export const DAY_MS = 86_400_000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;
const TIME_RE = /^([01]\d|2[0-3]):([0-5]\d)$/;

/**
 * Midnight UTC of a `YYYY-MM-DD`, or undefined when it is not a real date of years
 * MIN_YEAR..MAX_YEAR (a range ends a day after its last date: past 9999 that is no timestamp
 * Postgres reads, which was a 500).
 */
export function parseDay(s: string): number | undefined {
  const m = DATE_RE.exec(s);
  if (!m) return undefined;
  const y = Number(m[1]);
  if (y < MIN_YEAR || y > MAX_YEAR) return undefined;
  const ms = Date.UTC(y, Number(m[2]) - 1, Number(m[3]));
  return dayString(ms) === s ? ms : undefined;
}

export function dayString(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}

export function startOfUtcDay(ms: number): number {
  return Math.floor(ms / DAY_MS) * DAY_MS;
}

/** `from`/`to` query dates (inclusive, default today); INVALID_PARAM as the spec names it. */
export function dayRange(from: string, to: string, nowMs: number, maxDays: number): { fromMs: number; toMs: number } {
  const today = startOfUtcDay(nowMs);
  const fromMs = from ? parseDay(from) : today;
  if (fromMs === undefined) throw new AppError('INVALID_PARAM', `from must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}`, { details: [{ field: 'from', problem: `must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}` }] });
  // `to` defaults to today, as the spec says (a `from` alone is "from then on"); after a future
  // `from`, to that day.
  const toMs = to ? parseDay(to) : Math.max(today, fromMs);
  if (toMs === undefined) throw new AppError('INVALID_PARAM', `to must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}`, { details: [{ field: 'to', problem: `must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}` }] });
  if (toMs < fromMs) throw new AppError('INVALID_PARAM', 'to is before from', { details: [{ field: 'to', problem: 'is before from' }] });
  if ((toMs - fromMs) / DAY_MS + 1 > maxDays) {
    // Without `to` (today), the `from` the caller sent is what is too far back.
    const field = to ? 'to' : 'from';
    const problem = to ? `at most ${maxDays} days after from` : `at most ${maxDays - 1} days before today without to`;
    throw new AppError('INVALID_PARAM', `at most ${maxDays} days per request`, { details: [{ field, problem }] });
  }
  return { fromMs, toMs };
}

/** `HH:MM` (24 h) -> minutes after midnight. */
export function parseTime(field: string, s: string | undefined): number {
  const m = TIME_RE.exec(s ?? '');
  if (!m) throw invalid(field, 'must be HH:MM (24 h)');
  return Number(m[1]) * 60 + Number(m[2]);
}

export function validTimezone(tz: string): boolean {
  try {
    new Intl.DateTimeFormat('en-US', { timeZone: tz });
    return true;
  } catch {
    return false;
  }
}

const fmtCache = new Map<string, Intl.DateTimeFormat>();
function fmt(tz: string): Intl.DateTimeFormat {
  let f = fmtCache.get(tz);
  if (!f) {
    f = new Intl.DateTimeFormat('en-US', { timeZone: tz, hourCycle: 'h23', year: 'numeric', month: 'numeric', day: 'numeric', hour: 'numeric', minute: 'numeric', second: 'numeric' });
    // Bounded: zones are validated before use and there are ~600 of them.
    if (fmtCache.size < 1000) fmtCache.set(tz, f);
  }
  return f;
}

/** Offset of `tz` from UTC at instant `ms`, in ms (Berlin in winter: +3 600 000). */
export function tzOffsetMs(tz: string, ms: number): number {
  const parts: Record<string, number> = {};
  for (const p of fmt(tz).formatToParts(new Date(ms))) if (p.type !== 'literal') parts[p.type] = Number(p.value);
  const asUtc = Date.UTC(parts.year, parts.month - 1, parts.day, parts.hour, parts.minute, parts.second);
  return asUtc - Math.floor(ms / 1000) * 1000;
}

/** The UTC instant of local wall time `minutes` after midnight of calendar day `dayMs` (a UTC-midnight `YYYY-MM-DD`) in `tz`. */
export function zonedToUtc(dayMs: number, minutes: number, tz: string): number {
  const wall = dayMs + minutes * 60_000;
  let guess = wall - tzOffsetMs(tz, wall);
  guess = wall - tzOffsetMs(tz, guess);
  return guess;
}

/** The local calendar day (as UTC-midnight ms) and weekday (0 = Sunday) of instant `ms` in `tz`. */
export function localDay(ms: number, tz: string): { dayMs: number; weekday: number } {
  const dayMs = startOfUtcDay(ms + tzOffsetMs(tz, ms));
  return { dayMs, weekday: new Date(dayMs).getUTCDay() };
}

export function overlapMs(aStart: number, aEnd: number, bStart: number, bEnd: number): number {
  return Math.max(0, Math.min(aEnd, bEnd) - Math.max(aStart, bStart));
}
