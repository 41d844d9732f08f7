/**
 * Query checks of the pipeline analytics routes (pure): `agent_id` and the inclusive UTC date
 * range `from`/`to` (`YYYY-MM-DD`). The range is bounded (MAX_RANGE_DAYS) so one request reads a
 * bounded slice of the agent's index; every failure is a 400 naming its field.
 */
import { invalid } from '../../shared/errors.js';
import { MAX_YEAR, MIN_YEAR, uuidField } from '../http/validate.js';

/** Longest range one request may cover (inclusive days): a quarter. */
export const MAX_RANGE_DAYS = 92;
/** Range when `from` is absent: `to` and the 29 days before it. */
export const DEFAULT_RANGE_DAYS = 30;

const DAY_MS = 86_400_000;
const DATE_RE = /^(\d{4})-(\d{2})-(\d{2})$/;

export interface PipelineQuery {
  agentId: string;
  /** Inclusive dates as given (or defaulted). */
  from: string;
  to: string;
  /** `from` 00:00 UTC and the midnight after `to` (exclusive): the SQL bounds. */
  start: Date;
  end: Date;
}

export function parsePipelineQuery(req: { agentId?: string; from?: string; to?: string }, nowMs: number): PipelineQuery {
  const agentId = uuidField('agent_id', req.agentId, true)!;
  const { fromMs, toMs } = dateRange(req, nowMs);
  return { agentId, from: iso(fromMs), to: iso(toMs), start: new Date(fromMs), end: new Date(toMs + DAY_MS) };
}

/**
 * The inclusive UTC day range (midnights) of `from` / `to`: `to` defaults to today, `from` to 29
 * days before `to`. Too long a range names `to`, or `from` when `to` was not sent (the client
 * did not choose today).
 */
export function dateRange(req: { from?: string; to?: string }, nowMs: number): { fromMs: number; toMs: number } {
  // `from` is read first: when both are wrong, the error names the first of the pair.
  const fromGiven = req.from?.trim() ? dateMs('from', req.from) : undefined;
  const toGiven = req.to?.trim() ? dateMs('to', req.to) : undefined;
  const toMs = toGiven ?? Math.floor(nowMs / DAY_MS) * DAY_MS;
  const fromMs = fromGiven ?? toMs - (DEFAULT_RANGE_DAYS - 1) * DAY_MS;
  if (fromMs > toMs) throw invalid('from', 'must be on or before to');
  const days = (toMs - fromMs) / DAY_MS + 1;
  if (days > MAX_RANGE_DAYS) {
    if (toGiven === undefined) throw invalid('from', `must be at most ${MAX_RANGE_DAYS} days before to (inclusive; to defaults to today, ${iso(toMs)}); got ${days}`);
    throw invalid('to', `must be at most ${MAX_RANGE_DAYS} days from from (inclusive); got ${days}`);
  }
  return { fromMs, toMs };
}

/** A real calendar date `YYYY-MM-DD` (UTC midnight in ms); `2026-02-30` is refused, not rolled over. */
export function dateMs(field: string, value: string): number {
  const m = DATE_RE.exec(value.trim());
  if (!m) throw invalid(field, 'must be a date YYYY-MM-DD');
  const [y, mo, d] = [Number(m[1]), Number(m[2]), Number(m[3])];
  // The range first: Date.UTC reads years 0-99 as 1900-1999, so 0001-01-01 would fail as "not a calendar date".
  if (y < MIN_YEAR || y > MAX_YEAR) throw invalid(field, `must be a date between ${MIN_YEAR}-01-01 and ${MAX_YEAR}-12-31`);
  const ms = Date.UTC(y, mo - 1, d);
  const back = new Date(ms);
  if (back.getUTCFullYear() !== y || back.getUTCMonth() !== mo - 1 || back.getUTCDate() !== d) throw invalid(field, 'must be a valid calendar date YYYY-MM-DD');
  return ms;
}

function iso(ms: number): string {
  return new Date(ms).toISOString().slice(0, 10);
}
