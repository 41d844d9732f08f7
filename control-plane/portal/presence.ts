/**
 * Presence state of human agents, in Postgres so every control-plane replica sees and changes the
 * same state (docs/portal.md "Presence"). Every change runs in one transaction under the agent
 * row's lock: the open session, the open status span, the row's `status` and the timeline event
 * move together.
 *
 * - `login`: opens a session and an `available` span (a still-open session of the same agent,
 *   e.g. a second tab, is closed first as `replaced`); raises `late_login` when it lands inside a
 *   judged shift window (attendance.ts `judgedWindows`) after the grace period with no earlier
 *   login in that window.
 * - `setStatus`: closes the open span, opens one in the new status (`offline` is `logout`).
 * - `heartbeat`: stamps `last_heartbeat_at`; false when the session is no longer the agent's
 *   current one (replaced, timed out, deactivated): the socket then closes.
 * - `logout`: closes span and session at a given instant (the sweep uses the last heartbeat).
 */
import type postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';
import type { Clock } from '../../shared/clock.js';
import { newId } from '../../shared/ids.js';
import { DAY_MS, startOfUtcDay } from './time.js';
import { judgedWindows, type InactivePeriod, type PresenceStatus, type ShiftIn } from './attendance.js';

type Tx = postgres.TransactionSql<Record<string, unknown>>;

export interface PresenceDeps {
  sql: Sql;
  clock: Clock;
  lateGraceMin: number;
}

export interface LoginResult {
  sessionId: string;
  status: PresenceStatus;
}

export interface Presence {
  login(agentId: string, ip: string, source: string): Promise<LoginResult>;
  setStatus(agentId: string, sessionId: string, status: PresenceStatus, source: string, details?: Record<string, unknown>): Promise<boolean>;
  heartbeat(agentId: string, sessionId: string): Promise<boolean>;
  logout(agentId: string, sessionId: string, reason: string, source: string, atMs?: number): Promise<boolean>;
}

export async function recordEvent(
  tx: Tx | Sql,
  e: { agentId: string; workspaceId: string; type: string; status?: string; source: string; sessionId?: string | null; ip?: string; details?: Record<string, unknown>; at: Date },
): Promise<void> {
  await tx`
    insert into human_agent_presence_events (id, agent_id, workspace_id, event_type, status, source, session_id, ip_address, details, created_at)
    values (${newId()}, ${e.agentId}, ${e.workspaceId}, ${e.type}, ${e.status ?? ''}, ${e.source}, ${e.sessionId ?? null}, ${e.ip ?? ''}, ${tx.json((e.details ?? {}) as never)}, ${e.at})`;
}

export async function raiseAlert(
  tx: Tx | Sql,
  a: { agentId: string; workspaceId: string; type: string; severity: string; message: string; details: Record<string, unknown>; dedupeKey: string; at: Date },
): Promise<void> {
  await tx`
    insert into human_agent_alerts (id, agent_id, workspace_id, alert_type, severity, message, details, dedupe_key, created_at)
    values (${newId()}, ${a.agentId}, ${a.workspaceId}, ${a.type}, ${a.severity}, ${a.message}, ${tx.json(a.details as never)}, ${a.dedupeKey}, ${a.at})
    on conflict (dedupe_key) do nothing`;
}

interface LockedAgent {
  id: string;
  workspace_id: string;
  display_name: string;
  status: PresenceStatus;
  presence_session_id: string | null;
  is_active: boolean;
  created_at: Date;
  status_changed_at: Date | null;
}

export function createPresence(deps: PresenceDeps): Presence {
  const { sql, clock } = deps;

  const lock = async (tx: Tx, agentId: string) =>
    (await tx<LockedAgent[]>`select id, workspace_id, display_name, status, presence_session_id, is_active, created_at, status_changed_at from human_agents where id = ${agentId} for update`)[0];

  async function closeOpen(tx: Tx, a: LockedAgent, reason: string, source: string, endAt: Date): Promise<void> {
    if (!a.presence_session_id) return;
    // A session ended at its last message (a heartbeat timeout) never ends before its last status
    // change: that change may be stamped a moment after the message arrived.
    const at = a.status_changed_at && a.status_changed_at > endAt ? a.status_changed_at : endAt;
    await tx`update human_agent_status_spans set ended_at = greatest(started_at, ${at}) where session_id = ${a.presence_session_id} and ended_at is null`;
    await tx`update human_agent_sessions set ended_at = greatest(started_at, ${at}), end_reason = ${reason} where id = ${a.presence_session_id} and ended_at is null`;
    await tx`update human_agents set status = 'offline', status_changed_at = ${at}, presence_session_id = null, updated_at = ${at} where id = ${a.id}`;
    await recordEvent(tx, { agentId: a.id, workspaceId: a.workspace_id, type: reason === 'logout' ? 'logout' : reason, status: 'offline', source, sessionId: a.presence_session_id, at });
  }

  async function lateLoginCheck(tx: Tx, a: LockedAgent, nowMs: number): Promise<void> {
    const shifts = await tx<ShiftIn[]>`select agent_id, day_of_week, shift_start, shift_end, timezone, created_at from human_agent_shifts where agent_id = ${a.id} and deleted_at is null`;
    if (!shifts.length) return;
    // A window cut by the agent's reactivation is not judged (migration 0025).
    const inactive = await tx<InactivePeriod[]>`
      select started_at, ended_at from human_agent_inactive_periods where agent_id = ${a.id} and coalesce(ended_at, 'infinity') > ${new Date(nowMs - 2 * DAY_MS)}`;
    const today = startOfUtcDay(nowMs);
    // Yesterday's overnight shifts may still be running.
    for (const day of [today - DAY_MS, today]) {
      // Only judged windows: one already running when the shift was posted is nobody's lateness.
      for (const w of judgedWindows(shifts, day, a.created_at, inactive)) {
        if (nowMs <= w.start + deps.lateGraceMin * 60_000 || nowMs >= w.end) continue;
        const [earlier] = await tx`
          select 1 from human_agent_sessions where agent_id = ${a.id} and started_at < ${new Date(nowMs)}
            and coalesce(ended_at, 'infinity') > ${new Date(w.start)} limit 1`;
        if (earlier) continue;
        const lateS = Math.round((nowMs - w.start) / 1000);
        await raiseAlert(tx, {
          agentId: a.id,
          workspaceId: a.workspace_id,
          type: 'late_login',
          severity: 'warning',
          message: `${a.display_name} logged in ${Math.round(lateS / 60)} min after the shift start`,
          details: { scheduled_start: new Date(w.start).toISOString(), login_at: new Date(nowMs).toISOString(), late_seconds: lateS },
          dedupeKey: `late:${a.id}:${w.start}`,
          at: new Date(nowMs),
        });
      }
    }
  }

  return {
    async login(agentId, ip, source) {
      return sql.begin(async (tx) => {
        const a = await lock(tx, agentId);
        if (!a || !a.is_active) throw new Error('agent not active');
        const nowMs = clock.now();
        const now = new Date(nowMs);
        await closeOpen(tx, a, 'replaced', source, now);
        await lateLoginCheck(tx, a, nowMs);
        const sessionId = newId();
        await tx`insert into human_agent_sessions (id, agent_id, workspace_id, started_at, ip_address) values (${sessionId}, ${agentId}, ${a.workspace_id}, ${now}, ${ip})`;
        await tx`insert into human_agent_status_spans (id, agent_id, session_id, status, started_at) values (${newId()}, ${agentId}, ${sessionId}, 'available', ${now})`;
        await tx`update human_agents set status = 'available', status_changed_at = ${now}, last_heartbeat_at = ${now}, presence_session_id = ${sessionId}, updated_at = ${now} where id = ${agentId}`;
        await recordEvent(tx, { agentId, workspaceId: a.workspace_id, type: 'login', status: 'available', source, sessionId, ip, at: now });
        return { sessionId, status: 'available' as const };
      });
    },

    async setStatus(agentId, sessionId, status, source, details) {
      if (status === 'offline') return this.logout(agentId, sessionId, 'logout', source);
      return sql.begin(async (tx) => {
        const a = await lock(tx, agentId);
        if (!a || a.presence_session_id !== sessionId) return false;
        const now = new Date(clock.now());
        if (a.status === status) return true;
        await tx`update human_agent_status_spans set ended_at = greatest(started_at, ${now}) where session_id = ${sessionId} and ended_at is null`;
        await tx`insert into human_agent_status_spans (id, agent_id, session_id, status, started_at) values (${newId()}, ${agentId}, ${sessionId}, ${status}, ${now})`;
        await tx`update human_agents set status = ${status}, status_changed_at = ${now}, last_heartbeat_at = ${now}, updated_at = ${now} where id = ${agentId}`;
        await recordEvent(tx, { agentId, workspaceId: a.workspace_id, type: 'status_change', status, source, sessionId, details: { from: a.status, ...details }, at: now });
        return true;
      });
    },

    async heartbeat(agentId, sessionId) {
      const rows = await sql`update human_agents set last_heartbeat_at = ${new Date(clock.now())} where id = ${agentId} and presence_session_id = ${sessionId} returning id`;
      return rows.length === 1;
    },

    async logout(agentId, sessionId, reason, source, atMs) {
      return sql.begin(async (tx) => {
        const a = await lock(tx, agentId);
        if (!a || a.presence_session_id !== sessionId) return false;
        await closeOpen(tx, a, reason, source, new Date(atMs ?? clock.now()));
        return true;
      });
    },
  };
}
