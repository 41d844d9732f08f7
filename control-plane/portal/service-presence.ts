/**
 * PortalService, presence half: realtime presence, attendance, timeline, presence alerts, shifts
 * and `GET /sessions/active`. Access rules as in service.ts.
 *
 * Realtime presence is computed lazily as well as swept: an agent whose last heartbeat is older
 * than PORTAL_HEARTBEAT_TIMEOUT_S reads `offline` even before the sweep job has closed the session.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { PortalService } from '../../shared/gen/voiceplane/v1/portal_pb.js';
import type { Sql } from '../../shared/db/client.js';
import type { Clock } from '../../shared/clock.js';
import type { Auth } from '../http/auth.js';
import { AppError, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import { iso } from '../http/validate.js';
import { computeAttendance, type AgentIn, type InactivePeriod, type SessionIn, type ShiftIn, type SpanIn } from './attendance.js';
import type { PortalAccess } from './service.js';
import type { AgentRow } from './store.js';
import { DAY_MS, dayRange, parseDay, parseTime, startOfUtcDay, validTimezone } from './time.js';
import { MAX_YEAR, MIN_YEAR } from '../http/validate.js';

type Impl = ServiceImpl<typeof PortalService>;

/** Spec: at most 100 presence alerts per read, newest first. */
export const MAX_ALERTS = 100;
/** Attendance days per request (bounds the work of one read). */
export const MAX_ATTENDANCE_DAYS = 62;
const MAX_TIMELINE_EVENTS = 5000;
/**
 * Sessions, and status spans, one attendance read takes (each). The day range bounds the dates, not
 * the rows: an agent flipping status all day makes many. Beyond: 400 asking for a narrower read.
 */
export const MAX_ATTENDANCE_ROWS = 100_000;

export interface PresenceServiceDeps {
  sql: Sql;
  clock: Clock;
  auth: Auth;
  access: PortalAccess;
  heartbeatTimeoutS: number;
}

export function createPresenceService(deps: PresenceServiceDeps): Partial<Impl> {
  const { sql, clock, access } = deps;
  /** The status a reader should see: a silent socket is offline already. */
  const liveStatus = (a: { status: string; last_heartbeat_at: Date | null }, nowMs: number) =>
    a.status !== 'offline' && (!a.last_heartbeat_at || a.last_heartbeat_at.getTime() < nowMs - deps.heartbeatTimeoutS * 1000) ? 'offline' : a.status;

  return {
    async presenceRealtime(req, ctx) {
      if (!req.workspaceId) throw invalid('workspace_id', 'is required');
      const ws = await access.workspace(ctx, req.workspaceId, 'member');
      const nowMs = clock.now();
      const rows = await sql<AgentRow[]>`select * from human_agents where workspace_id = ${ws} and is_active order by lower(agent_code) limit 1000`;
      return {
        rows: rows.map((a) => {
          const status = liveStatus(a, nowMs);
          const changed = status === a.status ? a.status_changed_at : a.last_heartbeat_at ?? a.status_changed_at;
          return { id: a.id, displayName: a.display_name, agentCode: a.agent_code, status, statusChangedAt: iso(changed), updatedAt: iso(a.updated_at), maxConcurrentCalls: a.max_concurrent_calls };
        }),
      };
    },

    async attendance(req, ctx) {
      if (!req.workspaceId) throw invalid('workspace_id', 'is required');
      const nowMs = clock.now();
      const { fromMs, toMs } = dayRange(req.from, req.to, nowMs, MAX_ATTENDANCE_DAYS);
      if (req.agentId && !isUuid(req.agentId)) throw new AppError('INVALID_PARAM', 'agent_id must be a UUID', { details: [{ field: 'agent_id', problem: 'must be a UUID' }] });
      const ws = await access.workspace(ctx, req.workspaceId, 'member');
      const agentFilter = req.agentId ? req.agentId.toLowerCase() : null;
      const agents = await sql<AgentIn[]>`
        select id, display_name, agent_code, created_at from human_agents
        where workspace_id = ${ws} and (${agentFilter}::uuid is null or id = ${agentFilter}) order by lower(agent_code) limit 1000`;
      if (agentFilter && !agents.length) {
        // As the per-agent routes answer: another owner's agent is 403 (spec "Authentication" rule 2), an unknown one 404.
        await access.agent(ctx, agentFilter, 'member');
        throw notFound('human agent in this workspace');
      }
      const ids = agents.map((a) => a.id);
      const from = new Date(fromMs);
      const to = new Date(toMs + DAY_MS);
      // Sessions overlapping the range, plus those that began in it (first_login / session_count).
      const sessions = await sql<SessionIn[]>`
        select agent_id, started_at, ended_at from human_agent_sessions
        where agent_id = any(${ids}) and started_at < ${to} and coalesce(ended_at, 'infinity') > ${from} limit ${MAX_ATTENDANCE_ROWS + 1}`;
      const spans = await sql<SpanIn[]>`
        select agent_id, status, started_at, ended_at from human_agent_status_spans
        where agent_id = any(${ids}) and started_at < ${to} and coalesce(ended_at, 'infinity') > ${from} limit ${MAX_ATTENDANCE_ROWS + 1}`;
      if (sessions.length > MAX_ATTENDANCE_ROWS || spans.length > MAX_ATTENDANCE_ROWS)
        throw invalid('to', `the range holds more than ${MAX_ATTENDANCE_ROWS} sessions or status changes: ask for fewer days or one agent_id`);
      const shifts = await sql<ShiftIn[]>`
        select agent_id, day_of_week, shift_start, shift_end, timezone, created_at from human_agent_shifts where agent_id = any(${ids}) and deleted_at is null`;
      const inactive = await sql<(InactivePeriod & { agent_id: string })[]>`
        select agent_id, started_at, ended_at from human_agent_inactive_periods
        where agent_id = any(${ids}) and started_at < ${new Date(toMs + 3 * DAY_MS)} and coalesce(ended_at, 'infinity') > ${new Date(fromMs - DAY_MS)} limit ${MAX_ATTENDANCE_ROWS + 1}`;
      if (inactive.length > MAX_ATTENDANCE_ROWS) throw invalid('to', `the range holds more than ${MAX_ATTENDANCE_ROWS} deactivations: ask for fewer days or one agent_id`);
      const rows = computeAttendance({ agents, sessions, spans, shifts, inactive, fromMs, toMs, nowMs });
      return {
        rows: rows.map((r) => ({
          id: r.id,
          agentId: r.agent_id,
          displayName: r.display_name,
          agentCode: r.agent_code,
          date: r.date,
          onlineSeconds: r.online_seconds,
          availableSeconds: r.available_seconds,
          busySeconds: r.busy_seconds,
          onCallSeconds: r.on_call_seconds,
          wrapUpSeconds: r.wrap_up_seconds,
          breakSeconds: r.break_seconds,
          sessionCount: r.session_count,
          breakCount: r.break_count,
          firstLogin: r.first_login,
          lastLogout: r.last_logout,
          scheduledStart: r.scheduled_start,
          scheduledEnd: r.scheduled_end,
          lateLoginSeconds: r.late_login_seconds === undefined ? undefined : r.late_login_seconds,
          earlyLogoutSeconds: r.early_logout_seconds === undefined ? undefined : r.early_logout_seconds,
          shiftAdherencePct: r.shift_adherence_pct,
        })),
      };
    },

    async timeline(req, ctx) {
      const day = req.date ? parseDay(req.date) : startOfUtcDay(clock.now());
      if (day === undefined) throw new AppError('INVALID_PARAM', `date must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}`, { details: [{ field: 'date', problem: `must be a date YYYY-MM-DD of years ${MIN_YEAR}-${MAX_YEAR}` }] });
      const a = await access.agent(ctx, req.agentId, 'member');
      const rows = await sql<{ id: string; event_type: string; status: string; source: string; session_id: string | null; ip_address: string; details: Record<string, unknown>; created_at: Date }[]>`
        select * from human_agent_presence_events where agent_id = ${a.id} and created_at >= ${new Date(day)} and created_at < ${new Date(day + DAY_MS)}
        order by created_at, id limit ${MAX_TIMELINE_EVENTS}`;
      return {
        events: rows.map((e) => ({ id: e.id, eventType: e.event_type, status: e.status, source: e.source, sessionId: e.session_id ?? '', ipAddress: e.ip_address, details: e.details as never, createdAt: iso(e.created_at) })),
      };
    },

    async presenceAlerts(req, ctx) {
      if (!req.workspaceId) throw invalid('workspace_id', 'is required');
      const ws = await access.workspace(ctx, req.workspaceId, 'member');
      const rows = await sql<{ id: string; agent_id: string; alert_type: string; severity: string; message: string; details: Record<string, unknown>; acknowledged: boolean; created_at: Date }[]>`
        select * from human_agent_alerts where workspace_id = ${ws} and (not acknowledged or ${!req.unacknowledged})
        order by created_at desc, id desc limit ${MAX_ALERTS}`;
      return {
        alerts: rows.map((r) => ({ id: r.id, agentId: r.agent_id, alertType: r.alert_type, severity: r.severity, message: r.message, details: r.details as never, acknowledged: r.acknowledged, createdAt: iso(r.created_at) })),
      };
    },

    async acknowledgeAlert(req, ctx) {
      if (!req.alertId || !isUuid(req.alertId)) throw notFound('presence alert');
      const [al] = await sql<{ agent_id: string }[]>`select agent_id from human_agent_alerts where id = ${req.alertId}`;
      if (!al) throw notFound('presence alert');
      await access.agent(ctx, al.agent_id, 'manager');
      await sql`update human_agent_alerts set acknowledged = true where id = ${req.alertId}`;
      return { status: 'acknowledged' };
    },

    async upsertShift(req, ctx) {
      const day = req.dayOfWeek;
      if (!Number.isInteger(day) || day < 0 || day > 6) throw invalid('day_of_week', 'must be 0 (Sunday) to 6 (Saturday)');
      const start = parseTime('shift_start', req.shiftStart);
      const end = parseTime('shift_end', req.shiftEnd);
      if (start === end) throw invalid('shift_end', 'must differ from shift_start');
      const tz = req.timezone?.trim() || 'UTC';
      if (tz.length > 64 || !validTimezone(tz)) throw invalid('timezone', 'must be an IANA time zone such as Europe/Berlin');
      const a = await access.agent(ctx, req.agentId, 'admin');
      const at = new Date(clock.now());
      // Same agent, day and start: the row is updated and revived if it was deleted. `created_at` is
      // where judging starts (attendance.ts `judgedWindows`): an edit of a live shift keeps it (the
      // agent was already expected at that start), a revive restarts it, as a deleted shift is judged
      // on no day and its weeks away must not come back as missed.
      const [row] = await sql<{ id: string }[]>`
        insert into human_agent_shifts (id, agent_id, day_of_week, shift_start, shift_end, timezone, created_at, updated_at)
        values (${newId()}, ${a.id}, ${day}, ${req.shiftStart}, ${req.shiftEnd}, ${tz}, ${at}, ${at})
        on conflict (agent_id, day_of_week, shift_start) do update
          set shift_end = excluded.shift_end, timezone = excluded.timezone, deleted_at = null, updated_at = excluded.updated_at,
              created_at = case when human_agent_shifts.deleted_at is null then human_agent_shifts.created_at else excluded.created_at end
        returning id`;
      return { status: 'shift_created', id: row.id };
    },

    async agentShifts(req, ctx) {
      const a = await access.agent(ctx, req.agentId, 'member');
      const rows = await sql<{ id: string; agent_id: string; day_of_week: number; shift_start: string; shift_end: string; timezone: string; created_at: Date; updated_at: Date }[]>`
        select * from human_agent_shifts where agent_id = ${a.id} and deleted_at is null order by day_of_week, shift_start`;
      return {
        shifts: rows.map((s) => ({ id: s.id, agentId: s.agent_id, dayOfWeek: s.day_of_week, shiftStart: s.shift_start, shiftEnd: s.shift_end, timezone: s.timezone, createdAt: iso(s.created_at), updatedAt: iso(s.updated_at) })),
      };
    },

    async deleteShift(req, ctx) {
      // Authenticated first (a bad bearer is 401 whatever the id), then the id's shape, as the sibling routes.
      await access.caller(ctx);
      if (!req.shiftId || !isUuid(req.shiftId)) throw invalid('shift_id', 'must be a UUID');
      const [s] = await sql<{ agent_id: string }[]>`select agent_id from human_agent_shifts where id = ${req.shiftId} and deleted_at is null`;
      if (!s) throw notFound('shift');
      await access.agent(ctx, s.agent_id, 'admin');
      await sql`update human_agent_shifts set deleted_at = ${new Date(clock.now())} where id = ${req.shiftId}`;
      return { status: 'deleted' };
    },

    async activeSessions(req, ctx) {
      const p = await access.caller(ctx);
      const wss = req.workspaceId ? [await access.workspace(ctx, req.workspaceId, 'member')] : await deps.auth.workspaceIds(p);
      const nowMs = clock.now();
      const rows = await sql<{ id: string; agent_id: string; workspace_id: string; started_at: Date; ip_address: string; display_name: string; agent_code: string; status: string; last_heartbeat_at: Date | null }[]>`
        select s.id, s.agent_id, s.workspace_id, s.started_at, s.ip_address, a.display_name, a.agent_code, a.status, a.last_heartbeat_at
        from human_agent_sessions s join human_agents a on a.presence_session_id = s.id
        where s.ended_at is null and s.workspace_id = any(${wss}) and a.last_heartbeat_at >= ${new Date(nowMs - deps.heartbeatTimeoutS * 1000)}
        order by s.started_at limit 1000`;
      return {
        sessions: rows.map((r) => ({
          sessionId: r.id,
          agentId: r.agent_id,
          workspaceId: r.workspace_id,
          displayName: r.display_name,
          agentCode: r.agent_code,
          status: liveStatus(r, nowMs),
          startedAt: iso(r.started_at),
          lastHeartbeatAt: iso(r.last_heartbeat_at),
          ipAddress: r.ip_address,
        })),
      };
    },
  };
}
