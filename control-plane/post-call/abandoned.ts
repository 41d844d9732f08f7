/**
 * The abandoned-call sweeper (issue 14; spec doc 3: `abandoned` = "ended without recorded
 * completion, closed by a sweeper"). A carrier call's conversation that is still `active` long
 * after any call can last (the engine died, its end record never arrived) is closed as `failed`
 * with `metadata.end_reason = 'abandoned'`. The status change fires the post-call trigger like any
 * other end, so the call gets its summary decision and its `call.completed` (status `abandoned`).
 *
 * Every replica sweeps on its injected clock; the guarded update (`status = 'active'`) makes
 * concurrent sweeps harmless. Bounded: `batchSize` rows per sweep.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { CALL_TTL_MS } from '../telephony/live-calls.js';
import { ABANDONED_REASON } from '../webhooks/events.js';

export interface AbandonedSweeperOptions {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  /** A carrier call's conversation active longer than this is abandoned. Default: the live-call TTL (6 h). */
  staleMs?: number;
  /** Sweep period. Default 5 min. */
  intervalMs?: number;
  /** Rows closed per sweep. Default 500. */
  batchSize?: number;
}

export interface AbandonedSweeper {
  /** One sweep now; resolves with the number of conversations closed. */
  sweep(): Promise<number>;
  close(): void;
}

export function startAbandonedSweeper(opts: AbandonedSweeperOptions): AbandonedSweeper {
  const { sql, clock, logger } = opts;
  const staleMs = opts.staleMs ?? CALL_TTL_MS;
  const batchSize = opts.batchSize ?? 500;

  async function sweep(): Promise<number> {
    const now = new Date(clock.now());
    const before = new Date(clock.now() - staleMs);
    const rows = await sql`
      update conversations set status = 'failed', ended_at = ${now}, updated_at = ${now},
        metadata = metadata || ${sql.json({ end_reason: ABANDONED_REASON })}
      where id in (
        select id from conversations
        where status = 'active' and call_id is not null and started_at < ${before}
        order by started_at limit ${batchSize} for update skip locked)
        and status = 'active'
      returning id`;
    if (rows.length) logger.warn({ closed: rows.length }, 'abandoned calls closed by the sweeper');
    return rows.length;
  }

  const timer = clock.setInterval(() => {
    sweep().catch((err: Error) => logger.warn({ err }, 'abandoned-call sweep failed'));
  }, opts.intervalMs ?? 5 * 60_000);

  return {
    sweep,
    close: () => clock.clearInterval(timer),
  };
}
