/** Small SQL helpers shared by the agents domain and the provider registry. */

/**
 * Runs a postgres.js query and cancels it on the server when the call's signal aborts (client went
 * away, server shutting down), so an abandoned request does not keep a connection busy.
 */
export function run<T>(query: PromiseLike<T> & { cancel(): unknown }, signal?: AbortSignal): Promise<T> {
  if (!signal) return Promise.resolve(query);
  if (signal.aborted) {
    // The client is already gone. Settle the (lazy) query quietly: its rejection from `cancel()`
    // must not surface as an unhandled rejection (bench/rest.ts hit this on every run).
    Promise.resolve(query).catch(() => {});
    cancelQuietly(query);
    return Promise.reject(signal.reason ?? new Error('aborted'));
  }
  const onAbort = () => cancelQuietly(query);
  signal.addEventListener('abort', onAbort, { once: true });
  return Promise.resolve(query).finally(() => signal.removeEventListener('abort', onAbort));
}

function cancelQuietly(query: { cancel(): unknown }): void {
  try {
    Promise.resolve(query.cancel()).catch(() => {});
  } catch {
    // cancelling a query that already finished
  }
}

/** RFC 3339 UTC with milliseconds; "" for null. Accepts Date or the text form of json_agg rows. */
export function iso(d: Date | string | null | undefined): string {
  if (d === null || d === undefined) return '';
  return (d instanceof Date ? d : new Date(d)).toISOString();
}

/** Postgres unique_violation (23505), optionally on a named constraint/index. */
export function isUniqueViolation(err: unknown, constraint?: string): boolean {
  const e = err as { code?: string; constraint_name?: string } | undefined;
  return e?.code === '23505' && (!constraint || e.constraint_name === constraint);
}
