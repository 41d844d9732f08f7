/**
 * Row shapes, row -> message mappers and the SQL shared by several account services.
 * `Tx` is either the pool or a transaction: the helpers run inside the caller's transaction.
 */
import type { JsonObject } from '@bufbuild/protobuf';
import type postgres from 'postgres';
import { newId } from '../../shared/ids.js';
import type { WorkspaceRole } from '../http/auth.js';
import { iso } from '../http/validate.js';

export type Tx = postgres.Sql<Record<string, unknown>> | postgres.TransactionSql<Record<string, unknown>>;

export interface UserRow {
  id: string;
  email: string;
  first_name: string;
  last_name: string;
  created_at: Date;
}

export interface WorkspaceRow {
  id: string;
  user_id: string;
  name: string;
  created_at: Date;
  updated_at: Date;
  role?: WorkspaceRole;
}

export interface MemoryRow {
  id: string;
  workspace_id: string;
  title: string;
  content: string;
  content_type: string;
  metadata: JsonObject;
  is_active: boolean;
  created_at: Date;
  updated_at: Date;
}

export const userJson = (u: UserRow) => ({ id: u.id, email: u.email, firstName: u.first_name, lastName: u.last_name, createdAt: iso(u.created_at) });

export const workspaceJson = (w: WorkspaceRow, role?: WorkspaceRole) => ({
  id: w.id,
  userId: w.user_id,
  name: w.name,
  createdAt: iso(w.created_at),
  updatedAt: iso(w.updated_at),
  role: role ?? w.role ?? '',
});

export const memoryJson = (m: MemoryRow) => ({
  id: m.id,
  workspaceId: m.workspace_id,
  title: m.title,
  content: m.content,
  contentType: m.content_type,
  metadata: m.metadata ?? {},
  isActive: m.is_active,
  createdAt: iso(m.created_at),
  updatedAt: iso(m.updated_at),
});

export async function loadUser(tx: Tx, userId: string): Promise<UserRow | undefined> {
  const [u] = await tx<UserRow[]>`select id, email, first_name, last_name, created_at from users where id = ${userId}`;
  return u;
}

/** A workspace plus its owner membership. */
export async function insertWorkspace(tx: Tx, ownerId: string, name: string): Promise<WorkspaceRow> {
  const id = newId();
  const [w] = await tx<WorkspaceRow[]>`
    insert into workspaces (id, user_id, name) values (${id}, ${ownerId}, ${name})
    returning id, user_id, name, created_at, updated_at`;
  await tx`insert into workspace_members (workspace_id, user_id, role) values (${id}, ${ownerId}, 'owner')`;
  return { ...w, role: 'owner' };
}
