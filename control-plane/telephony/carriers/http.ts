/**
 * One JSON-or-form request to a carrier's REST API, for the Plivo, Vonage and Exotel clients: a
 * per-request timeout, the caller's abort signal, and every failure as a `CarrierError` (status 0:
 * unreachable; otherwise the carrier's status with its own message when it gave one).
 */
import { CarrierError } from '../twilio-client.js';

export { CarrierError };

export interface CarrierRequest {
  method: 'GET' | 'POST' | 'PUT' | 'DELETE';
  url: string;
  headers: Record<string, string>;
  /** A JSON value (sent as application/json) or a form (application/x-www-form-urlencoded). */
  json?: unknown;
  form?: URLSearchParams;
  timeoutMs: number;
  signal?: AbortSignal;
}

/** Largest carrier answer read; a REST answer about one call is a few KiB. */
const MAX_ANSWER_CHARS = 256 * 1024;

export async function carrierRequest(r: CarrierRequest): Promise<{ status: number; body: Record<string, unknown> }> {
  const timeout = AbortSignal.timeout(r.timeoutMs);
  const headers: Record<string, string> = { accept: 'application/json', ...r.headers };
  let body: string | undefined;
  if (r.json !== undefined) {
    headers['content-type'] = 'application/json';
    body = JSON.stringify(r.json);
  } else if (r.form) {
    headers['content-type'] = 'application/x-www-form-urlencoded';
    body = r.form.toString();
  }
  let res: Response;
  try {
    res = await fetch(r.url, { method: r.method, headers, body, signal: r.signal ? AbortSignal.any([r.signal, timeout]) : timeout });
  } catch (err) {
    throw new CarrierError(0, `carrier unreachable: ${(err as Error).message}`);
  }
  const text = (await res.text().catch(() => '')).slice(0, MAX_ANSWER_CHARS);
  let parsed: Record<string, unknown> = {};
  try {
    const v: unknown = text ? JSON.parse(text) : {};
    if (typeof v === 'object' && v !== null && !Array.isArray(v)) parsed = v as Record<string, unknown>;
  } catch {
    // not JSON: the status says enough
  }
  if (!res.ok) throw new CarrierError(res.status, carrierMessage(parsed) ?? `carrier answered ${res.status}`, typeof parsed.code === 'number' ? parsed.code : undefined);
  return { status: res.status, body: parsed };
}

/** The human message of a carrier's error body (Plivo `error`, Vonage `title`/`detail`, Exotel `RestException.Message`). */
function carrierMessage(b: Record<string, unknown>): string | undefined {
  for (const k of ['message', 'error', 'detail', 'title']) if (typeof b[k] === 'string') return b[k];
  const rest = b.RestException;
  if (typeof rest === 'object' && rest !== null && typeof (rest as Record<string, unknown>).Message === 'string') return (rest as Record<string, string>).Message;
  return undefined;
}

export function basicAuth(user: string, password: string): string {
  return `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`;
}
