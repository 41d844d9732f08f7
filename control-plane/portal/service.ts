/**
 * PortalService: roster (`/call-center/agents`), credentials and the agents' login. Presence,
 * attendance, shifts, alerts and `/sessions/active` are in service-presence.ts; index.ts joins them.
 *
 * Access (authentication rule 2): the caller must belong to the human agent's workspace; a
 * workspace or agent of another owner is 403 FORBIDDEN (not 404, as the spec says for the
 * portal). Writes need `admin`, reads any member. Every portal route takes a token from the
 * caller IP's bucket first (rate-limit.ts), so even a flood of bad requests is limited.
 *
 * Order of checks on a bearer route (`authenticateFirst`): rate limit, then the credential (401),
 * then the request's fields (400), then access to the agent or workspace (403/404). A request
 * without a valid credential learns nothing about what a valid body looks like.
 */
import { pageMeta, pageOf } from '../http/pagination.js';
import type { HandlerContext, ServiceImpl } from '@connectrpc/connect';
import type { PortalService } from '../../shared/gen/voiceplane/v1/portal_pb.js';
import type { Sql, SqlOrTx } from '../../shared/db/client.js';
import type { Clock } from '../../shared/clock.js';
import { alreadyExists, conflict, invalid, notFound } from '../../shared/errors.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { Auth, Principal, WorkspaceRole } from '../http/auth.js';
import { remoteIpOf } from '../http/context.js';
import type { RateLimiter } from '../accounts/rate-limit.js';
import { intInRange, iso, optionalNonEmpty, required } from '../http/validate.js';
import { passwordField, type Credentials, type Actor } from './credentials.js';
import type { TokenBuckets } from './rate-limit.js';
import type { Presence } from './presence.js';
import type { Handoff } from './handoff.js';
import type { CallRecord } from '../telephony/index.js';
import { agentView, getAgent, isCodeTaken, type AgentRow } from './store.js';

type Impl = ServiceImpl<typeof PortalService>;

export interface PortalAccess {
  workspace(ctx: HandlerContext, requested: string | undefined, min: WorkspaceRole): Promise<string>;
  agent(ctx: HandlerContext, id: string | undefined, min: WorkspaceRole): Promise<AgentRow>;
  actor(ctx: HandlerContext): Promise<Actor>;
  /** One token from the caller IP's bucket, once per call however often it is asked. */
  limit(ctx: HandlerContext): void;
  /** The rate limit, then the bearer (401 UNAUTHORIZED; cached per call by `Auth`). */
  caller(ctx: HandlerContext): Promise<Principal>;
}

/** Methods whose credential is in the body (the password, the reset token): no bearer. */
export const NO_BEARER_METHODS: ReadonlySet<string> = new Set(['portalLogin', 'confirmReset']);

/** Marks a call whose bucket token was taken (a method may reach `limit` through several helpers). */
const kLimited = Symbol('voiceplane.portal.limited');

export function createAccess(deps: { sql: Sql; auth: Auth; buckets: TokenBuckets }): PortalAccess {
  const { sql, auth } = deps;
  const limit = (ctx: HandlerContext): void => {
    const c = ctx as HandlerContext & { [kLimited]?: true };
    if (c[kLimited]) return;
    c[kLimited] = true;
    deps.buckets.take(remoteIpOf(ctx));
  };
  const caller = (ctx: HandlerContext): Promise<Principal> => {
    limit(ctx);
    return auth.principal(ctx);
  };
  return {
    limit,
    caller,
    async workspace(ctx, requested, min) {
      const p = await caller(ctx);
      const ws = requested || (await auth.defaultWorkspaceId(p));
      if (!ws) throw invalid('workspace_id', 'is required');
      if (!isUuid(ws)) throw invalid('workspace_id', 'must be a UUID');
      await auth.requireWorkspace(p, ws.toLowerCase(), { min, onDenied: 'forbidden' });
      return ws.toLowerCase();
    },
    async agent(ctx, id, min) {
      const p = await caller(ctx);
      if (!id) throw invalid('agent_id', 'is required');
      if (!isUuid(id)) throw invalid('agent_id', 'must be a UUID');
      const a = await getAgent(sql, id.toLowerCase());
      if (!a) throw notFound('human agent');
      await auth.requireWorkspace(p, a.workspace_id, { min, onDenied: 'forbidden' });
      return a;
    },
    async actor(ctx) {
      const p = await caller(ctx);
      return { by: p.email || p.userId, byId: p.userId, ip: remoteIpOf(ctx) };
    },
  };
}

/**
 * Every bearer method of `impl` checks the rate limit and the credential before its handler reads
 * the request (spec error table: 401 for a missing or bad key; a body is judged only for a caller
 * that may send one). One wrapper, so no method can put its field checks first.
 */
export function authenticateFirst(impl: Partial<Impl>, access: PortalAccess): Partial<Impl> {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(impl as Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>>)) {
    out[name] = NO_BEARER_METHODS.has(name)
      ? fn
      : async (req: unknown, ctx: HandlerContext) => {
          await access.caller(ctx);
          return fn(req, ctx);
        };
  }
  return out as Partial<Impl>;
}

const MAX_SKILLS = 50;
const CODE_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,63}$/;

function agentCode(field: string, v: string | undefined): string {
  const code = (v ?? '').trim();
  if (!CODE_RE.test(code)) throw invalid(field, 'must be 1-64 letters, digits, dot, dash or underscore, starting with a letter or digit');
  return code;
}

function optionalEmail(v: string | undefined): string | null | undefined {
  if (v === undefined) return undefined;
  const e = v.trim().toLowerCase();
  if (!e) return null;
  if (e.length > 254 || !/^[^\s@]+@[^\s@]+\.[^\s@]+$/.test(e)) throw invalid('email', 'must be an email address');
  return e;
}

function skills(v: string[]): string[] {
  if (v.length > MAX_SKILLS) throw invalid('skills', `at most ${MAX_SKILLS}`);
  const out = v.map((s, i) => {
    const t = s.trim();
    if (!t || t.length > 64) throw invalid(`skills[${i}]`, 'must be 1-64 characters');
    return t;
  });
  return [...new Set(out)];
}

export function createRosterService(deps: {
  sql: Sql;
  clock: Clock;
  access: PortalAccess;
  credentials: Credentials;
  presence: Presence;
  handoff: Handoff;
  liveCall(callId: string): Promise<CallRecord | undefined>;
  /** The login's per-IP and per-agent-code attempt limits (429 with retry-after). */
  loginLimiter: RateLimiter;
  /** Ends the presence socket of a session that ended here (on whichever replica holds it). */
  endSocket(agentId: string, sessionId: string): Promise<void>;
}): Partial<Impl> {
  const { sql, clock, access, credentials } = deps;
  const now = () => new Date(clock.now());

  async function write<T>(fn: () => Promise<T>): Promise<T> {
    try {
      return await fn();
    } catch (err) {
      if (isCodeTaken(err)) throw alreadyExists('agent_code is already used in this workspace');
      throw err;
    }
  }

  return {
    async createHumanAgent(req, ctx) {
      const displayName = required('display_name', req.displayName);
      const code = agentCode('agent_code', req.agentCode);
      const email = optionalEmail(req.email) ?? null;
      const max = intInRange('max_concurrent_calls', req.maxConcurrentCalls, 1, 20) ?? 1;
      const sk = skills(req.skills);
      const ws = await access.workspace(ctx, req.workspaceId, 'admin');
      const at = now();
      const [row] = await write(
        () => sql<AgentRow[]>`
        insert into human_agents (id, workspace_id, display_name, agent_code, email, max_concurrent_calls, skills, status_changed_at, created_at, updated_at)
        values (${newId()}, ${ws}, ${displayName}, ${code}, ${email}, ${max}, ${sk}, ${at}, ${at}, ${at}) returning *`,
      );
      return agentView(row);
    },

    async listHumanAgents(req, ctx) {
      // Validated before workspace access: a bad page is a 400 for any authenticated caller.
      const page = pageOf(req);
      const ws = await access.workspace(ctx, req.workspaceId, 'member');
      const inactive = req.includeInactive ?? false;
      const rows = await sql<(AgentRow & { total: number })[]>`
        select *, count(*) over ()::int as total from human_agents where workspace_id = ${ws} and (is_active or ${inactive})
        order by lower(agent_code), id limit ${page.limit} offset ${page.offset}`;
      // An offset past the end has no row to carry the count.
      const total = rows[0]?.total ?? (page.offset > 0 ? (await sql<{ n: number }[]>`select count(*)::int as n from human_agents where workspace_id = ${ws} and (is_active or ${inactive})`)[0]!.n : 0);
      return { agents: rows.map(agentView), meta: pageMeta(page, total) };
    },

    async getHumanAgent(req, ctx) {
      return agentView(await access.agent(ctx, req.agentId, 'member'));
    },

    async updateHumanAgent(req, ctx) {
      const displayName = optionalNonEmpty('display_name', req.displayName);
      const code = req.agentCode === undefined ? undefined : agentCode('agent_code', req.agentCode);
      const email = optionalEmail(req.email);
      const max = intInRange('max_concurrent_calls', req.maxConcurrentCalls, 1, 20);
      const sk = req.clearSkills ? [] : req.skills.length ? skills(req.skills) : undefined;
      const { id } = await access.agent(ctx, req.agentId, 'admin');
      // On the locked row, in one transaction: a concurrent deactivation is neither undone by a
      // stale `is_active` nor left with its inactive period open on an active agent. The time is
      // read once the lock is held, so inactive periods follow the order the writes took.
      const { row, deactivated, at } = await write(() =>
        sql.begin(async (tx) => {
          const [a] = await tx<AgentRow[]>`select * from human_agents where id = ${id} for update`;
          if (!a) throw notFound('human agent');
          const at = now();
          const active = req.isActive ?? a.is_active;
          const [row] = await tx<AgentRow[]>`
            update human_agents set display_name = ${displayName ?? a.display_name}, agent_code = ${code ?? a.agent_code},
              email = ${email === undefined ? a.email : email}, max_concurrent_calls = ${max ?? a.max_concurrent_calls},
              skills = ${sk ?? a.skills}, is_active = ${active}, updated_at = ${at}
            where id = ${id} returning *`;
          if (!active && a.is_active) await markInactive(tx, id, at);
          if (active && !a.is_active) await tx`update human_agent_inactive_periods set ended_at = ${at} where agent_id = ${id} and ended_at is null`;
          return { row: row!, deactivated: !active && a.is_active, at };
        }),
      );
      if (!deactivated) return agentView(row);
      // The logout changes the presence the answer shows (offline): read after it.
      await logoutDeactivated(id, at);
      return agentView((await getAgent(sql, id))!);
    },

    async deactivateHumanAgent(req, ctx) {
      const a = await access.agent(ctx, req.agentId, 'admin');
      const at = await sql.begin(async (tx) => {
        await tx`select 1 from human_agents where id = ${a.id} for update`;
        const at = now();
        await markInactive(tx, a.id, at);
        return at;
      });
      await logoutDeactivated(a.id, at);
      return agentView((await getAgent(sql, a.id))!);
    },

    async setPassword(req, ctx) {
      const pw = passwordField('password', req.password);
      const a = await access.agent(ctx, req.agentId, 'admin');
      await credentials.setPassword(a, pw, await access.actor(ctx));
      return { status: 'password_set' };
    },

    async resetPassword(req, ctx) {
      const a = await access.agent(ctx, req.agentId, 'admin');
      const r = await credentials.resetPassword(a, req.sendEmail, await access.actor(ctx));
      return { emailSent: r.emailSent, message: r.message, tempPassword: r.tempPassword };
    },

    async sendCredentials(req, ctx) {
      if (!req.tempPassword) throw invalid('temp_password', 'is required');
      const a = await access.agent(ctx, req.agentId, 'admin');
      await credentials.sendCredentials(a, req.tempPassword, await access.actor(ctx));
      return { status: 'email_sent' };
    },

    async confirmReset(req, ctx) {
      access.limit(ctx);
      // A missing field is a bad request; INVALID_TOKEN is for a token that was sent and is
      // used, revoked, expired or unknown (spec error table).
      if (!req.token) throw invalid('token', 'is required');
      await credentials.confirmReset(req.token, req.password, remoteIpOf(ctx));
      return { status: 'password_set' };
    },

    async passwordAudit(req, ctx) {
      const a = await access.agent(ctx, req.agentId, 'member');
      const rows = await sql<{ id: string; action: string; performed_by: string; performed_by_id: string; ip_address: string; details: Record<string, unknown>; created_at: Date }[]>`
        select * from human_agent_password_audit where agent_id = ${a.id} order by created_at desc, id limit 500`;
      return {
        entries: rows.map((r) => ({ id: r.id, action: r.action, performedBy: r.performed_by, performedById: r.performed_by_id, ipAddress: r.ip_address, details: r.details as never, createdAt: iso(r.created_at) })),
      };
    },

    async requestHandoff(req, ctx) {
      const call = req.callId && isUuid(req.callId) ? await deps.liveCall(req.callId.toLowerCase()) : undefined;
      if (!call) throw notFound('call');
      await access.workspace(ctx, call.workspace_id, 'member');
      if (call.transferred_to) throw conflict('the call was already transferred');
      if (!call.provider_call_sid || call.status !== 'in_progress') throw conflict('the call is not connected yet');
      const refused = await deps.handoff.refusal(call.agent_id);
      if (refused) throw conflict(refused);
      if (await deps.handoff.isOpen(call.call_id)) throw conflict('the call is already offered to or connected with a person');
      const noCarrier = await deps.handoff.carrierRefusal(call.call_id);
      if (noCarrier) throw conflict(noCarrier);
      const r = await deps.handoff.request({ workspaceId: call.workspace_id, callId: call.call_id, sessionId: call.session_id, aiAgentId: call.agent_id });
      return r.status === 'offered'
        ? { status: r.status, handoffId: r.handoffId, humanAgentId: r.humanAgentId, fallbackMessage: '' }
        : { status: r.status, handoffId: r.handoffId, humanAgentId: '', fallbackMessage: r.fallbackMessage };
    },

    async portalLogin(req, ctx) {
      access.limit(ctx);
      await deps.loginLimiter.hit(['portalLoginPerIp', remoteIpOf(ctx)], ['portalLoginPerCode', `${req.workspaceId}:${req.agentCode.toLowerCase()}`]);
      const r = await credentials.login(req.workspaceId, req.agentCode, req.password);
      return { token: r.token, expiresAt: iso(r.expiresAt), agent: agentView(r.agent) };
    },
  };

  /** Inactive: no login, no presence; open sessions end now, tokens are revoked. */
  /** Inside the caller's transaction, on the agent's locked row. */
  async function markInactive(tx: SqlOrTx, agentId: string, at: Date): Promise<void> {
    await tx`update human_agents set is_active = false, updated_at = ${at} where id = ${agentId}`;
    // Shift windows of the inactive period are not judged (attendance.ts judgedWindows).
    await tx`insert into human_agent_inactive_periods (agent_id, started_at) values (${agentId}, ${at}) on conflict (agent_id) where ended_at is null do nothing`;
    await tx`update human_agent_tokens set revoked_at = ${at} where agent_id = ${agentId} and revoked_at is null`;
  }

  /** After the deactivation committed: ends the agent's presence (a socket and the registry, not Postgres). */
  async function logoutDeactivated(agentId: string, at: Date): Promise<void> {
    const [a] = await sql<{ presence_session_id: string | null }[]>`select presence_session_id from human_agents where id = ${agentId}`;
    if (!a?.presence_session_id) return;
    await deps.presence.logout(agentId, a.presence_session_id, 'deactivated', 'admin', at.getTime());
    await deps.endSocket(agentId, a.presence_session_id);
  }
}

