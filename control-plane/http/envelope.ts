/**
 * Response shapes per route family (spec documents 1 and 2):
 * - `envelope`: agent-side routes, `/campaigns`, `/conversations`, `/sessions`:
 *   `{success, data, error, meta?, timestamp}`.
 * - `raw`: `/telephony/*`, `/voice/*`, health: the JSON itself; errors `{error: {code, message}}`.
 * - `detail`: connector routes: listings `{data}`, errors `{detail}`.
 */
import type { AppError } from '../../shared/errors.js';
import { isoNow } from '../../shared/iso-time.js';

export type Family = 'envelope' | 'raw' | 'detail';

export function familyForPath(pathname: string): Family {
  if (pathname.startsWith('/api/v1/telephony') || pathname.startsWith('/api/v1/voice')) return 'raw';
  if (pathname.startsWith('/api/v1/connectors')) return 'detail';
  if (!pathname.startsWith('/api/v1')) return 'raw';
  return 'envelope';
}

export function successBody(family: Family, data: unknown, meta?: unknown): unknown {
  if (family === 'envelope') {
    const body: Record<string, unknown> = { success: true, data, error: null };
    if (meta !== undefined) body.meta = meta;
    body.timestamp = isoNow();
    return body;
  }
  return data;
}

/**
 * `JSON.stringify(successBody(family, data, meta))` from already serialized `data` and `meta`
 * (same bytes, same key order): a cached response is serialized once, not per request.
 */
export function successJson(family: Family, dataJson: string, metaJson?: string): string {
  if (family !== 'envelope') return dataJson;
  const meta = metaJson === undefined ? '' : `,"meta":${metaJson}`;
  return `{"success":true,"data":${dataJson},"error":null${meta},"timestamp":"${isoNow()}"}`;
}

export function errorBody(family: Family, err: AppError): unknown {
  const error: Record<string, unknown> = { code: err.code, message: err.message };
  if (err.details?.length) error.details = err.details;
  if (family === 'envelope') return { success: false, data: null, error, timestamp: isoNow() };
  if (family === 'detail') return { detail: err.message, ...err.options.body };
  return { error };
}

/** `o` with each of `keys` it lacks set to null: proto JSON leaves an unset optional out, REST writes the spec's field as null. */
export function withNulls(o: Record<string, unknown>, keys: readonly string[]): Record<string, unknown> {
  const out = { ...o };
  for (const k of keys) out[k] ??= null;
  return out;
}
