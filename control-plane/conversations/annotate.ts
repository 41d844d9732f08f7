/**
 * Carrier facts about a call (final status, carrier duration, AMD verdict, recording link) merged
 * into the conversation's `metadata`. The engine writes the row asynchronously, so a callback can
 * arrive first: the update is retried a few times before giving up (logged).
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { maskSessionId } from '../../shared/ids.js';

/** Which conversation a carrier callback is about: a session id is unique per workspace only (migration 0024). */
export interface AnnotatedCall {
  session_id: string;
  workspace_id: string;
}

export interface Annotator {
  annotate(call: AnnotatedCall, patch: Record<string, unknown>): void;
  close(): void;
}

export function createAnnotator(deps: { sql: Sql; clock: Clock; logger: Logger; retries?: number; retryMs?: number }): Annotator {
  const retries = deps.retries ?? 5;
  const retryMs = deps.retryMs ?? 2000;
  const timers = new Set<ReturnType<Clock['setTimeout']>>();
  let closed = false;

  async function attempt(call: AnnotatedCall, patch: Record<string, unknown>, left: number): Promise<void> {
    if (closed) return;
    // Scoped by the call's workspace: another tenant's row with the same session id (possible
    // since 0024) must never receive this call's carrier facts (its recording link).
    const rows = await deps.sql`
      update conversations set metadata = metadata || ${deps.sql.json(patch as never)}, updated_at = now()
      where session_id = ${call.session_id} and workspace_id = ${call.workspace_id} returning id`;
    if (rows.length > 0 || left <= 0) {
      if (rows.length === 0) deps.logger.warn({ session: maskSessionId(call.session_id) }, 'call annotation found no conversation row');
      return;
    }
    const t = deps.clock.setTimeout(() => {
      timers.delete(t);
      run(call, patch, left - 1);
    }, retryMs);
    timers.add(t);
  }

  function run(call: AnnotatedCall, patch: Record<string, unknown>, left: number): void {
    attempt(call, patch, left).catch((err: Error) => deps.logger.warn({ err }, 'call annotation failed'));
  }

  return {
    annotate: (call, patch) => run(call, patch, retries),
    close() {
      closed = true;
      for (const t of timers) deps.clock.clearTimeout(t);
      timers.clear();
    },
  };
}
