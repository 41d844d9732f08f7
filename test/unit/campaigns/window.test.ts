/**
 * Calling-window maths (control-plane/campaigns/window.ts) as tables: validation naming the
 * field, open/closed instants in UTC for windows in America/New_York across both DST changes of
 * 2026 (a window crossing midnight keeps its wall-clock hours while the UTC offset moves).
 */
import { describe, expect, it } from 'vitest';
import { isOpen, nextOpenMs, windowOf, type CallingWindow } from '../../../control-plane/campaigns/window.js';

const t = (iso: string) => Date.parse(iso);
const NY = (start: string, end: string): CallingWindow => windowOf({ calling_hours_start: start, calling_hours_end: end, timezone: 'America/New_York' });

describe('windowOf', () => {
  it.each([
    [{}, 'always'],
    [{ calling_hours_start: '', calling_hours_end: '', timezone: '' }, 'always'],
    [{ timezone: 'Europe/Paris' }, 'always'],
    [{ calling_hours_start: '09:00', calling_hours_end: '17:00', timezone: 'Europe/Paris' }, 'hours'],
  ])('%j -> %s', (f, kind) => {
    expect(windowOf(f).kind).toBe(kind);
  });

  it.each([
    [{ calling_hours_start: '09:00', timezone: 'UTC' }, 'calling_hours_end'],
    [{ calling_hours_end: '17:00', timezone: 'UTC' }, 'calling_hours_start'],
    [{ calling_hours_start: '9:00', calling_hours_end: '17:00', timezone: 'UTC' }, 'calling_hours_start'],
    [{ calling_hours_start: '09:00', calling_hours_end: '24:00', timezone: 'UTC' }, 'calling_hours_end'],
    [{ calling_hours_start: '09:00', calling_hours_end: '09:00', timezone: 'UTC' }, 'calling_hours_end'],
    [{ calling_hours_start: '09:00', calling_hours_end: '17:00' }, 'timezone'],
    [{ calling_hours_start: '09:00', calling_hours_end: '17:00', timezone: 'Mars/Olympus' }, 'timezone'],
    [{ timezone: 'Nowhere/City' }, 'timezone'],
  ])('%j is invalid, naming %s', (f, field) => {
    const w = windowOf(f);
    expect(w.kind).toBe('invalid');
    expect(w.kind === 'invalid' && w.problem.field).toBe(field);
  });
});

describe('isOpen / nextOpenMs in America/New_York', () => {
  // [window, instant (UTC), open?, next opening (UTC)]
  const rows: Array<[string, string, string, boolean, string]> = [
    // Daytime window, EDT (UTC-4).
    ['09:00', '17:00', '2026-07-01T12:59:00Z', false, '2026-07-01T13:00:00.000Z'],
    ['09:00', '17:00', '2026-07-01T13:00:00Z', true, '2026-07-01T13:00:00.000Z'],
    ['09:00', '17:00', '2026-07-01T21:00:00Z', false, '2026-07-02T13:00:00.000Z'],
    // 21:00-08:00 across the fall-back night (2026-11-01 02:00 EDT -> 01:00 EST).
    ['21:00', '08:00', '2026-11-01T00:59:00Z', false, '2026-11-01T01:00:00.000Z'], // 20:59 EDT
    ['21:00', '08:00', '2026-11-01T01:00:00Z', true, '2026-11-01T01:00:00.000Z'], // 21:00 EDT
    ['21:00', '08:00', '2026-11-01T06:30:00Z', true, '2026-11-01T06:30:00.000Z'], // 01:30 EST (second pass)
    ['21:00', '08:00', '2026-11-01T12:59:00Z', true, '2026-11-01T12:59:00.000Z'], // 07:59 EST
    ['21:00', '08:00', '2026-11-01T13:00:00Z', false, '2026-11-02T02:00:00.000Z'], // 08:00 EST -> 21:00 EST
    // 21:00-08:00 across the spring-forward night (2026-03-08 02:00 EST -> 03:00 EDT).
    ['21:00', '08:00', '2026-03-08T02:00:00Z', true, '2026-03-08T02:00:00.000Z'], // 21:00 EST on the 7th
    ['21:00', '08:00', '2026-03-08T11:59:00Z', true, '2026-03-08T11:59:00.000Z'], // 07:59 EDT
    ['21:00', '08:00', '2026-03-08T12:00:00Z', false, '2026-03-09T01:00:00.000Z'], // 08:00 EDT -> 21:00 EDT
    // A start inside the skipped hour opens at the first valid instant after it (03:00 EDT).
    ['02:30', '05:00', '2026-03-08T06:00:00Z', false, '2026-03-08T07:30:00.000Z'],
  ];
  it.each(rows)('%s-%s at %s: open %s, next %s', (start, end, at, open, next) => {
    const w = NY(start, end);
    expect(isOpen(w, t(at))).toBe(open);
    expect(new Date(nextOpenMs(w, t(at))!).toISOString()).toBe(next);
  });

  it('an invalid window never opens', () => {
    const w = windowOf({ calling_hours_start: '09:00', calling_hours_end: '09:00', timezone: 'UTC' });
    expect(isOpen(w, t('2026-07-01T09:30:00Z'))).toBe(false);
    expect(nextOpenMs(w, t('2026-07-01T09:30:00Z'))).toBeUndefined();
  });
});
