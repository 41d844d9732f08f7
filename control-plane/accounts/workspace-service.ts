/**
 * WorkspaceService: workspaces and their members. Fencing: a workspace the caller is not a member
 * of is a 404 (same as a missing one); a member whose role is too low gets 403.
 * Rules: any member reads; owner/admin rename and manage members (a role may only be granted or
 * removed below one's own, the owner may do all); only the owner deletes; the owner cannot be
 * removed or demoted. The organization owner acts as owner everywhere.
 */
import type { ServiceImpl } from '@connectrpc/connect';
import type { WorkspaceService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { conflict, forbidden, invalid, notFound } from '../../shared/errors.js';
import type { ControlPlaneDeps } from '../domain.js';
import { ROLE_RANK, type WorkspaceRole } from '../http/auth.js';
import type { AccountsAuth } from './auth.js';
import { insertWorkspace, workspaceJson, type WorkspaceRow } from './sql.js';
import { pageMeta, pageOf } from '../http/pagination.js';
import { email, iso, optionalNonEmpty, pathId, required } from '../http/validate.js';
import { Topic } from '../cache/topics.js';

/** Workspaces a user may own, and members per workspace: enforced by the database (migration 0004). */
export const MAX_OWNED_WORKSPACES = 100;
export const MAX_MEMBERS_PER_WORKSPACE = 1000;
const GRANTABLE: WorkspaceRole[] = ['admin', 'manager', 'member'];

interface MemberRow {
  user_id: string;
  email: string;
  first_name: string;
  last_name: string;
  role: WorkspaceRole;
  created_at: Date;
}

const memberJson = (m: MemberRow) => ({
  userId: m.user_id,
  email: m.email,
  firstName: m.first_name,
  lastName: m.last_name,
  role: m.role,
  createdAt: iso(m.created_at),
});

/** Owner acts on anyone; others only on roles strictly below their own. */
function outranks(actor: WorkspaceRole, target: WorkspaceRole): boolean {
  return actor === 'owner' || ROLE_RANK[actor] > ROLE_RANK[target];
}

/**
 * Another domain's part in deleting a workspace, called before the delete with the workspace id:
 * it reads what it needs while the rows exist, and returns what to do once the delete has
 * committed (e.g. revoking OAuth grants at the vendor: the cascade drops the only copy of the
 * tokens). Nothing is done when the delete does not happen.
 */
export type WorkspaceDeleteHook = (workspaceId: string) => Promise<(() => Promise<void>) | undefined>;

export function createWorkspaceService(deps: ControlPlaneDeps, auth: AccountsAuth, deleteHooks: readonly WorkspaceDeleteHook[] = []): ServiceImpl<typeof WorkspaceService> {
  const { sql } = deps;

  async function load(id: string): Promise<WorkspaceRow> {
    const [w] = await sql<WorkspaceRow[]>`select id, user_id, name, created_at, updated_at from workspaces where id = ${id}`;
    if (!w) throw notFound('workspace');
    return w;
  }

  return {
    async createWorkspace(req, ctx) {
      const p = await auth.principal(ctx);
      const name = required('name', req.name);
      // MAX_OWNED_WORKSPACES is enforced by the database on insert (409 LIMIT_REACHED, migration 0004).
      const w = await sql.begin((tx) => insertWorkspace(tx, p.userId, name));
      await auth.changed(Topic.user, p.userId);
      return workspaceJson(w);
    },

    async listWorkspaces(req, ctx) {
      const p = await auth.principal(ctx);
      const pg = pageOf(req);
      if (p.isOrgOwner) {
        const rows = await sql<WorkspaceRow[]>`
          select id, user_id, name, created_at, updated_at from workspaces
          order by created_at, id limit ${pg.limit} offset ${pg.offset}`;
        const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from workspaces`;
        return { workspaces: rows.map((w) => workspaceJson(w, 'owner')), meta: pageMeta(pg, n) };
      }
      const rows = await sql<WorkspaceRow[]>`
        select w.id, w.user_id, w.name, w.created_at, w.updated_at, m.role
        from workspace_members m join workspaces w on w.id = m.workspace_id
        where m.user_id = ${p.userId}
        order by w.created_at, w.id limit ${pg.limit} offset ${pg.offset}`;
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from workspace_members where user_id = ${p.userId}`;
      return { workspaces: rows.map((w) => workspaceJson(w)), meta: pageMeta(pg, n) };
    },

    async getWorkspace(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      const role = await auth.requireWorkspace(p, id);
      return workspaceJson(await load(id), role);
    },

    async updateWorkspace(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      const name = optionalNonEmpty('name', req.name);
      const role = await auth.requireWorkspace(p, id, { min: 'admin' });
      if (name === undefined) return workspaceJson(await load(id), role);
      const [w] = await sql<WorkspaceRow[]>`
        update workspaces set name = ${name}, updated_at = now() where id = ${id}
        returning id, user_id, name, created_at, updated_at`;
      if (!w) throw notFound('workspace');
      return workspaceJson(w, role);
    },

    async deleteWorkspace(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      await auth.requireWorkspace(p, id, { min: 'owner' });
      const afterDelete = await Promise.all(deleteHooks.map((hook) => hook(id)));
      // The members as the delete saw them (same snapshot): each one's cached memberships change.
      const rows = await sql<{ user_id: string | null }[]>`
        with m as (select user_id from workspace_members where workspace_id = ${id}),
             d as (delete from workspaces where id = ${id} returning id)
        select m.user_id from d left join m on true`.catch((err: { code?: string }) => {
        // 23503: a row of another domain still references it without a cascade.
        if (err?.code === '23503') throw conflict('the workspace still has dependent resources');
        throw err;
      });
      if (!rows.length) throw notFound('workspace');
      // First, and never failing the answer: the delete has committed, and what follows it (an
      // OAuth revoke) has nothing else to run from.
      await Promise.all(afterDelete.map((done) => done?.().catch((err: unknown) => deps.logger.warn({ err, workspaceId: id }, 'a step after the workspace delete failed'))));
      await auth.changed(Topic.workspace, id);
      for (const r of rows) if (r.user_id) await auth.changed(Topic.user, r.user_id);
      return { message: 'deleted' };
    },

    async listMembers(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      const pg = pageOf(req);
      await auth.requireWorkspace(p, id);
      const rows = await sql<MemberRow[]>`
        select m.user_id, u.email, u.first_name, u.last_name, m.role, m.created_at
        from workspace_members m join users u on u.id = m.user_id
        where m.workspace_id = ${id}
        order by m.created_at, m.user_id limit ${pg.limit} offset ${pg.offset}`;
      const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from workspace_members where workspace_id = ${id}`;
      return { members: rows.map(memberJson), meta: pageMeta(pg, n) };
    },

    async addMember(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      const em = email('email', req.email);
      const role = required('role', req.role, 16) as WorkspaceRole;
      if (!GRANTABLE.includes(role)) throw invalid('role', 'must be admin, manager or member');
      const actor = await auth.requireWorkspace(p, id, { min: 'admin' });
      if (!outranks(actor, role)) throw forbidden(`a workspace ${actor} cannot grant the ${role} role`);
      const [u] = await sql<{ id: string }[]>`
        select id from users where lower(email) = ${em} and email_verified_at is not null and not is_org_owner`;
      if (!u) throw notFound('user');
      const m = await sql.begin(async (tx) => {
        const [current] = await tx<{ role: WorkspaceRole }[]>`
          select role from workspace_members where workspace_id = ${id} and user_id = ${u.id} for update`;
        if (current?.role === 'owner') throw conflict('the owner role cannot be changed');
        if (current && !outranks(actor, current.role)) throw forbidden(`a workspace ${actor} cannot change a ${current.role}`);
        await tx`
          insert into workspace_members (workspace_id, user_id, role) values (${id}, ${u.id}, ${role})
          on conflict (workspace_id, user_id) do update set role = excluded.role`;
        const [row] = await tx<MemberRow[]>`
          select m.user_id, u.email, u.first_name, u.last_name, m.role, m.created_at
          from workspace_members m join users u on u.id = m.user_id
          where m.workspace_id = ${id} and m.user_id = ${u.id}`;
        return row;
      });
      await auth.changed(Topic.user, u.id);
      return memberJson(m);
    },

    async removeMember(req, ctx) {
      const p = await auth.principal(ctx);
      const id = pathId('workspace', req.id);
      const userId = pathId('member', req.userId);
      const actor = await auth.requireWorkspace(p, id);
      const [target] = await sql<{ role: WorkspaceRole }[]>`
        select role from workspace_members where workspace_id = ${id} and user_id = ${userId}`;
      if (!target) throw notFound('member');
      if (target.role === 'owner') throw conflict('the owner cannot be removed');
      // Anyone may leave; removing someone else needs admin and a higher role.
      const self = userId === p.userId;
      if (!self && (ROLE_RANK[actor] < ROLE_RANK.admin || !outranks(actor, target.role))) {
        throw forbidden(`a workspace ${actor} cannot remove a ${target.role}`);
      }
      await sql`delete from workspace_members where workspace_id = ${id} and user_id = ${userId}`;
      await auth.changed(Topic.user, userId);
      return { message: 'removed' };
    },
  };
}
