/**
 * Create and PATCH validation (spec doc 2, create fields and rules 1 and 3). Every failure is a
 * 400 naming the field. PATCH merges the keys sent onto the stored config and validates the
 * result as a whole, so sending only `calling_hours_end` against a stored start is judged as the
 * pair it makes.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import { invalid } from '../../shared/errors.js';
import { longerThan, MAX_YEAR, MIN_YEAR } from '../http/validate.js';
import { isUuid } from '../../shared/ids.js';
import { requireE164 } from '../agents/telephony/phone.js';
import type { CampaignConfig } from './store.js';
import { windowOf } from './window.js';
import { parseDay } from '../portal/time.js';

/** Spec defaults (Limits table). */
export const DEFAULTS = { pacing_per_minute: 10, max_concurrent_calls: 8, max_retries: 2 } as const;

/** Bounds of our own (the spec gives minimums only); documented in docs/campaigns.md. */
export const BOUNDS = {
  pacing_per_minute: [1, 6000],
  max_concurrent_calls: [1, 1000],
  max_retries: [0, 10],
} as const;

const MAX_NAME_CHARS = 200;

export interface ConfigInput {
  pacing_per_minute?: number;
  max_concurrent_calls?: number;
  max_retries?: number;
  from_number?: string;
  schedule_start?: string;
  calling_hours_start?: string;
  calling_hours_end?: string;
  timezone?: string;
}

/** The config keys of a create or PATCH request (proto field names are camelCase in code). */
export function configInput(req: {
  pacingPerMinute?: number;
  maxConcurrentCalls?: number;
  maxRetries?: number;
  fromNumber?: string;
  scheduleStart?: string;
  callingHoursStart?: string;
  callingHoursEnd?: string;
  timezone?: string;
}): ConfigInput {
  return {
    pacing_per_minute: req.pacingPerMinute,
    max_concurrent_calls: req.maxConcurrentCalls,
    max_retries: req.maxRetries,
    from_number: req.fromNumber,
    schedule_start: req.scheduleStart,
    calling_hours_start: req.callingHoursStart,
    calling_hours_end: req.callingHoursEnd,
    timezone: req.timezone,
  };
}

export function campaignName(v: string): string {
  const name = v.trim();
  if (!name) throw invalid('name', 'is required');
  if (longerThan(name, MAX_NAME_CHARS)) throw invalid('name', `must be at most ${MAX_NAME_CHARS} characters`);
  return name;
}

export function agentId(v: string): string {
  const id = v.trim();
  if (!id) throw invalid('agent_id', 'is required');
  if (!isUuid(id)) throw invalid('agent_id', 'must be a UUID');
  return id;
}

/** `base` with the keys present in `input` applied (undefined = not sent), then validated. */
export function mergeConfig(base: CampaignConfig, input: ConfigInput): CampaignConfig {
  const out: CampaignConfig = { ...base };
  for (const key of ['pacing_per_minute', 'max_concurrent_calls', 'max_retries'] as const) {
    const v = input[key];
    if (v === undefined) continue;
    const [lo, hi] = BOUNDS[key];
    if (!Number.isInteger(v) || v < lo || v > hi) throw invalid(key, `must be an integer from ${lo} to ${hi}`);
    out[key] = v;
  }
  if (input.from_number !== undefined) out.from_number = input.from_number.trim() ? requireE164('from_number', input.from_number) : '';
  if (input.schedule_start !== undefined) out.schedule_start = scheduleStart(input.schedule_start);
  for (const key of ['calling_hours_start', 'calling_hours_end', 'timezone'] as const) {
    const v = input[key];
    if (v !== undefined) out[key] = v.trim() === '' ? null : v.trim();
  }
  const w = windowOf(out);
  if (w.kind === 'invalid') throw invalid(w.problem.field, w.problem.problem);
  return out;
}

export function defaultConfig(): CampaignConfig {
  return { ...DEFAULTS, from_number: '', schedule_start: null, calling_hours_start: null, calling_hours_end: null, timezone: null };
}

const ISO_DATE_TIME = /^(\d{4}-\d{2}-\d{2})T(\d{2}):(\d{2})/;

function scheduleStart(v: string): string | null {
  const s = v.trim();
  if (s === '') return null;
  // ISO 8601 with a date and time; a bare date or free text is refused rather than guessed.
  const m = ISO_DATE_TIME.exec(s);
  const ms = m ? Date.parse(s) : NaN;
  if (!m || !Number.isFinite(ms)) throw invalid('schedule_start', 'must be an ISO 8601 timestamp such as 2026-12-01T09:00:00Z');
  // Date.parse rolls impossible values over instead of refusing them (2030-02-30 is read as
  // 2030-03-02, T24:00 as the next day's midnight): a campaign would start on a day nobody chose.
  if (parseDay(m[1]!) === undefined || Number(m[2]) > 23 || Number(m[3]) > 59) {
    throw invalid('schedule_start', `${JSON.stringify(s)} is not a real date and time (years ${MIN_YEAR}-${MAX_YEAR}, months 01-12, days of that month, hours 00-23, minutes 00-59)`);
  }
  return new Date(ms).toISOString();
}

/** `column_map`: CSV header -> variable name (`phone` picks the phone column); strings only. */
export function columnMap(v: JsonObject | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, val] of Object.entries(v ?? {})) {
    if (typeof val !== 'string' || !val.trim()) throw invalid('column_map', `value of ${JSON.stringify(k)} must be a non-empty string`);
    out[k.trim()] = val.trim();
  }
  return out;
}

/** Calls list paging (rule 6): `page` from 1, `per_page` 1 to 200 (default 50). */
export function callsPage(page: number | undefined, perPage: number | undefined): { page: number; perPage: number } {
  const p = page ?? 1;
  const pp = perPage ?? 50;
  if (!Number.isInteger(p) || p < 1) throw invalid('page', 'must be 1 or more');
  if (!Number.isInteger(pp) || pp < 1 || pp > 200) throw invalid('per_page', 'must be between 1 and 200');
  return { page: p, perPage: pp };
}
