/** Small SQL helpers shared by the agents domain and the provider registry. */
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
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

/**
 * A read-merge-write of an agent's sub-resource (a tool, a provider, the telephony binding) in one
 * transaction holding the agent row's lock: concurrent edits of one agent take turns, so none
 * merges into a row another is replacing (three PUTs of one tool each kept the others' old
 * fields; an edit without a key undid a concurrent key rotation). Not started when the client is
 * already gone; once started it completes, as `run`.
 */
export function withAgentLock<T>(sql: Sql, agentId: string, signal: AbortSignal | undefined, fn: (tx: SqlOrTx) => Promise<T>): Promise<T> {
  if (signal?.aborted) return Promise.reject(new ClientGoneError());
  return sql.begin(async (tx) => {
    await tx`select 1 from agents where id = ${agentId} for update`;
    return fn(tx);
  }) as Promise<T>;
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
