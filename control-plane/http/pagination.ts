/**
 * `limit` + `offset` in, `meta` out (API conventions): limit 1..max (default 20, max 200 unless a
 * route says otherwise, e.g. conversations 500), offset >= 0. Out-of-range values are 400 naming
 * the field, never silently clamped. One implementation for every list route.
 */
import { invalid } from '../../shared/errors.js';

export const DEFAULT_LIMIT = 20;
export const MAX_LIMIT = 200;

export interface Page {
  limit: number;
  offset: number;
}

/** The proto `PageMeta` init (camelCase here; JSON `page`, `per_page`, `total`, `total_pages`). */
export interface PageMetaInit {
  page: number;
  perPage: number;
  total: number;
  totalPages: number;
}

export function pageOf(req: { limit?: number; offset?: number }, maxLimit = MAX_LIMIT, defaultLimit = DEFAULT_LIMIT): Page {
  const limit = req.limit ?? defaultLimit;
  const offset = req.offset ?? 0;
  if (!Number.isInteger(limit) || limit < 1 || limit > maxLimit) throw invalid('limit', `must be between 1 and ${maxLimit}`);
  if (!Number.isInteger(offset) || offset < 0) throw invalid('offset', 'must be 0 or more');
  return { limit, offset };
}

/** page = floor(offset / limit) + 1; total_pages = ceil(total / limit) (0 when there is nothing). */
export function pageMeta(page: Page, total: number): PageMetaInit {
  return {
    page: Math.floor(page.offset / page.limit) + 1,
    perPage: page.limit,
    total,
    totalPages: Math.ceil(total / page.limit),
  };
}
