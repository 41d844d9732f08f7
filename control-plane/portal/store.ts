/** SQL of the portal domain: the roster and its credentials. Presence lives in presence.ts. */
import { createHash } from 'node:crypto';
import type { Sql } from '../../shared/db/client.js';
import { newId } from '../../shared/ids.js';
import { iso } from '../http/validate.js';

export interface AgentRow {
  id: string;
  workspace_id: string;
  display_name: string;
  agent_code: string;
  email: string | null;
  max_concurrent_calls: number;
  skills: string[];
  is_active: boolean;
  password_hash: string | null;
  status: string;
  status_changed_at: Date;
  last_heartbeat_at: Date | null;
  presence_session_id: string | null;
  created_at: Date;
  updated_at: Date;
}

export function agentView(a: AgentRow) {
  return {
    id: a.id,
    workspaceId: a.workspace_id,
    displayName: a.display_name,
    agentCode: a.agent_code,
    email: a.email ?? '',
    maxConcurrentCalls: a.max_concurrent_calls,
    skills: a.skills,
    isActive: a.is_active,
    hasPassword: Boolean(a.password_hash),
    status: a.status,
    statusChangedAt: iso(a.status_changed_at),
    createdAt: iso(a.created_at),
    updatedAt: iso(a.updated_at),
  };
}

/** Tokens are stored as their sha-256: a database read never yields a usable token. */
export function tokenHash(token: string): string {
  return createHash('sha256').update(token).digest('base64url');
}

export async function getAgent(sql: Sql, id: string): Promise<AgentRow | undefined> {
  return (await sql<AgentRow[]>`select * from human_agents where id = ${id}`)[0];
}

export async function audit(
  sql: Sql,
  e: { agentId: string; action: string; by: string; byId: string; ip: string; details?: Record<string, unknown>; at: Date },
): Promise<void> {
  await sql`
    insert into human_agent_password_audit (id, agent_id, action, performed_by, performed_by_id, ip_address, details, created_at)
    values (${newId()}, ${e.agentId}, ${e.action}, ${e.by}, ${e.byId}, ${e.ip}, ${sql.json((e.details ?? {}) as never)}, ${e.at})`;
}

/** A Postgres unique violation on the per-workspace agent code. */
export function isCodeTaken(err: unknown): boolean {
  const e = err as { code?: string; constraint_name?: string };
  return e?.code === '23505' && e.constraint_name === 'human_agents_code_key';
}
