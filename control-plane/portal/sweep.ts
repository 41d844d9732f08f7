/**
 * The presence sweep: `portal.presence-sweep` jobs on the durable queue, one key for the
 * deployment (like the alert evaluator: each pass queues its successor first, every replica kicks
 * one at start). Offline-after-timeout therefore never depends on the process that held the
 * socket: a replica that died with open sockets leaves `last_heartbeat_at` behind, and whichever
 * replica sweeps next closes those sessions at their last heartbeat.
 *
 * One pass (at the injected clock's now):
 * 1. stale presence: status not offline and no heartbeat for PORTAL_HEARTBEAT_TIMEOUT_S -> offline
 *    (`heartbeat_timeout`), session closed at the last heartbeat;
 * 2. `missed_shift`: a judged shift window (attendance.ts `judgedWindows`) that ended in the last
 *    24 h with no session overlapping it;
 * 3. `long_break`: an open `break` span older than PORTAL_LONG_BREAK_MIN;
 * 4. hand-off offers past their time, and engine hand-off requests stored while the registry bus
 *    was unreachable (`human_handoff_requests`: each gets its `portal.handoff` job);
 * 5. human-segment transcripts still `pending` that can no longer arrive end `failed`.
 * Alerts carry a dedupe key, so a repeated pass never raises one twice.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import type { Jobs, JobContext } from '../jobs/index.js';
import { recurringPass } from '../jobs/recurring.js';
import { judgedWindows, type InactivePeriod, type ShiftIn } from './attendance.js';
import { raiseAlert, type Presence } from './presence.js';
import { DAY_MS, startOfUtcDay } from './time.js';

export interface SweepDeps {
  sql: Sql;
  jobs: Jobs;
  clock: Clock;
  logger: Logger;
  presence: Presence;
  intervalS: number;
  heartbeatTimeoutS: number;
  longBreakMin: number;
  /** Offers past their time go to the next free agent. */
  expireOffers?: () => Promise<number>;
  /** Engine hand-off requests whose bus notice was lost get their job. */
  retryLostRequests?: () => Promise<number>;
  /** Human-segment transcripts that can no longer arrive end `failed` (transcribe.ts). */
  abandonTranscripts?: () => Promise<number>;
}

export interface SweepResult {
  timedOut: number;
  alerts: number;
}

export interface Sweep {
  kick(): Promise<void>;
  tick(): Promise<SweepResult>;
  run(job: JobContext<'portal.presence-sweep'>): Promise<void>;
}

const KEY = 'presence';
/** Per pass, so one pass stays short; the next pass continues. */
const BATCH = 500;

export function createSweep(deps: SweepDeps): Sweep {
  const { sql, jobs, clock, logger } = deps;

  async function tick(): Promise<SweepResult> {
    const nowMs = clock.now();
    const now = new Date(nowMs);
    let timedOut = 0;
    const stale = await sql<{ id: string; presence_session_id: string; last_heartbeat_at: Date }[]>`
      select id, presence_session_id, last_heartbeat_at from human_agents
      where status <> 'offline' and presence_session_id is not null
        and last_heartbeat_at < ${new Date(nowMs - deps.heartbeatTimeoutS * 1000)}
      limit ${BATCH}`;
    for (const a of stale) {
      if (await deps.presence.logout(a.id, a.presence_session_id, 'heartbeat_timeout', 'sweep', a.last_heartbeat_at.getTime())) timedOut++;
    }
    let alerts = 0;
    const shifts = await sql<(ShiftIn & { id: string; workspace_id: string; display_name: string; agent_created_at: Date })[]>`
      select s.id, s.created_at, s.agent_id, s.day_of_week, s.shift_start, s.shift_end, s.timezone, a.workspace_id, a.display_name, a.created_at as agent_created_at
      from human_agent_shifts s join human_agents a on a.id = s.agent_id
      where s.deleted_at is null and a.is_active limit ${BATCH * 10}`;
    const today = startOfUtcDay(nowMs);
    // Windows cut by a deactivation are not judged (migration 0025); only recent periods matter here.
    const periods = shifts.length
      ? await sql<(InactivePeriod & { agent_id: string })[]>`
        select agent_id, started_at, ended_at from human_agent_inactive_periods
        where agent_id = any(${[...new Set(shifts.map((s) => s.agent_id))]}) and coalesce(ended_at, 'infinity') > ${new Date(today - 3 * DAY_MS)}`
      : [];
    for (const s of shifts) {
      const inactive = periods.filter((p) => p.agent_id === s.agent_id);
      for (const day of [today - 2 * DAY_MS, today - DAY_MS, today]) {
        // Judged windows only (the rule attendance and late_login share), ended within the last day.
        for (const w of judgedWindows([s], day, s.agent_created_at, inactive)) {
          if (w.end > nowMs || w.end < nowMs - DAY_MS) continue;
          const [seen] = await sql`
            select 1 from human_agent_sessions where agent_id = ${s.agent_id}
              and started_at < ${new Date(w.end)} and coalesce(ended_at, 'infinity') > ${new Date(w.start)} limit 1`;
          if (seen) continue;
          const r = await sql`select 1 from human_agent_alerts where dedupe_key = ${`missed:${s.id}:${w.start}`}`;
          if (r.length) continue;
          await raiseAlert(sql, {
            agentId: s.agent_id,
            workspaceId: s.workspace_id,
            type: 'missed_shift',
            severity: 'critical',
            message: `${s.display_name} did not log in during the shift`,
            details: { shift_id: s.id, scheduled_start: new Date(w.start).toISOString(), scheduled_end: new Date(w.end).toISOString() },
            dedupeKey: `missed:${s.id}:${w.start}`,
            at: now,
          });
          alerts++;
        }
      }
    }
    const breaks = await sql<{ id: string; agent_id: string; started_at: Date; workspace_id: string; display_name: string }[]>`
      select sp.id, sp.agent_id, sp.started_at, a.workspace_id, a.display_name
      from human_agent_status_spans sp join human_agents a on a.id = sp.agent_id
      where sp.status = 'break' and sp.ended_at is null and sp.started_at < ${new Date(nowMs - deps.longBreakMin * 60_000)}
        and not exists (select 1 from human_agent_alerts al where al.dedupe_key = 'break:' || sp.id::text)
      limit ${BATCH}`;
    for (const b of breaks) {
      const minutes = Math.floor((nowMs - b.started_at.getTime()) / 60_000);
      await raiseAlert(sql, {
        agentId: b.agent_id,
        workspaceId: b.workspace_id,
        type: 'long_break',
        severity: 'warning',
        message: `${b.display_name} has been on break for ${minutes} min`,
        details: { break_started_at: b.started_at.toISOString(), minutes, limit_minutes: deps.longBreakMin },
        dedupeKey: `break:${b.id}`,
        at: now,
      });
      alerts++;
    }
    await deps.expireOffers?.();
    await deps.retryLostRequests?.();
    await deps.abandonTranscripts?.();
    if (timedOut || alerts) logger.info({ timedOut, alerts }, 'presence sweep');
    return { timedOut, alerts };
  }

  // Passes seconds apart: a failed one is retried by the next.
  const recurring = recurringPass({ jobs, logger, name: 'portal.presence-sweep', data: { tick: KEY }, intervalS: deps.intervalS, pass: tick, onError: 'next-pass' });
  return { kick: recurring.kick, tick, run: recurring.run };
}
