/** Small SQL helpers shared by the agents domain and the provider registry. */
import { isoOf } from '../../shared/iso-time.js';

/**
 * Runs a postgres.js query for a request. When the client is already gone the query is never
 * started (postgres.js queries are lazy). Once started it always runs to completion and the
 * result is dropped with the request: cancelling it on the server raced postgres.js's parser and
 * left pooled connections wedged (issue 11, defect 4). Runaway queries are ended by the
 * connection's `statement_timeout` instead (db/client.ts).
 */
export function run<T>(query: PromiseLike<T>, signal?: AbortSignal): Promise<T> {
  if (signal?.aborted) return Promise.reject(new ClientGoneError());
  return Promise.resolve(query);
}

/** The request's client disconnected before this work began; nobody is waiting for an answer. */
export class ClientGoneError extends Error {
  constructor() {
    super('client disconnected');
    this.name = 'AbortError';
  }
}

/** RFC 3339 UTC with milliseconds; "" for null. Accepts Date or the text form of json_agg rows. */
export const iso = isoOf;

/** Postgres unique_violation (23505), optionally on a named constraint/index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string } | undefined;
  return e?.code === '23505' && (!constraint || e.constraint_name === constraint);
}
