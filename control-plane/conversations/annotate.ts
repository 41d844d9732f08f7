/**
 * Carrier facts about a call (final status, carrier duration, AMD verdict, recording link) merged
 * into the conversation's `metadata`. The engine writes the row asynchronously, so a callback can
 * arrive first: the update is retried a few times before giving up (logged).
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { maskSessionId } from '../../shared/ids.js';

export interface Annotator {
  annotate(sessionId: string, patch: Record<string, unknown>): void;
  close(): void;
}

export function createAnnotator(deps: { sql: Sql; clock: Clock; logger: Logger; retries?: number; retryMs?: number }): Annotator {
  const retries = deps.retries ?? 5;
  const retryMs = deps.retryMs ?? 2000;
  const timers = new Set<ReturnType<Clock['setTimeout']>>();
  let closed = false;

  async function attempt(sessionId: string, patch: Record<string, unknown>, left: number): Promise<void> {
    if (closed) return;
    const rows = await deps.sql`
      update conversations set metadata = metadata || ${deps.sql.json(patch as never)}, updated_at = now()
      where session_id = ${sessionId} returning id`;
    if (rows.length > 0 || left <= 0) {
      if (rows.length === 0) deps.logger.warn({ session: maskSessionId(sessionId) }, 'call annotation found no conversation row');
      return;
    }
    const t = deps.clock.setTimeout(() => {
      timers.delete(t);
      run(sessionId, patch, left - 1);
    }, retryMs);
    timers.add(t);
  }

  function run(sessionId: string, patch: Record<string, unknown>, left: number): void {
    attempt(sessionId, patch, left).catch((err: Error) => deps.logger.warn({ err }, 'call annotation failed'));
  }

  return {
    annotate: (sessionId, patch) => run(sessionId, patch, retries),
    close() {
      closed = true;
      for (const t of timers) deps.clock.clearTimeout(t);
      timers.clear();
    },
  };
}
