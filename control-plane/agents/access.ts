/**
 * Who may touch which agent. Fencing is by workspace membership: an agent of a workspace the caller
 * is not a member of answers 404 exactly like a missing one (same message, so existence does not
 * leak). Roles: any member reads and edits the draft; publishing, rolling back and deleting need
 * `manager` or above (403 FORBIDDEN for a member below that).
 */
import type { HandlerContext } from '@connectrpc/connect';
import { AppError, forbidden, notFound } from '../../shared/errors.js';
import { grants } from '../http/scopes.js';
import { ROLE_RANK, type Auth, type Principal, type WorkspaceRole } from '../http/auth.js';
import type { AgentsDeps } from './deps.js';
import { getAgentRow } from './core/store.js';
import type { AgentRow } from './types.js';
import { pathId } from '../http/validate.js';

export type AgentOp = 'read' | 'edit' | 'publish' | 'delete';

/** Minimum role per kind of operation (documented in docs/agents.md). */
export const ROLE_FOR: Record<AgentOp, WorkspaceRole> = {
  read: 'member',
  edit: 'member',
  publish: 'manager',
  delete: 'manager',
};

/**
 * API keys with a scope list are limited to it: `agents:read` (or `agents:write`) to read,
 * `agents:write` for anything else. JWTs, the organization key (`*`) and keys created without
 * scopes are not limited.
 */
export function requireAgentScope(p: Principal, op: AgentOp): void {
  if (p.via !== 'api_key' || p.scopes.length === 0 || p.scopes.includes('*')) return;
  const ok = op === 'read' ? p.scopes.includes('agents:read') || p.scopes.includes('agents:write') : p.scopes.includes('agents:write');
  if (!ok) throw forbidden(`this API key lacks the ${op === 'read' ? 'agents:read' : 'agents:write'} scope`);
}

/**
 * Binding a workspace connection to an agent (a `connector` tool, a hand-written
 * `connector_binding`, an entry added to `connectors`): spec doc 1, Connectors, "adding to an
 * agent" needs owner, admin or manager, and an API key needs `connectors:write` as well as
 * `agents:write` (the connectors route's own rule, so the agent routes are no way around it).
 */
export function canBindConnectors(a: AgentAccess): boolean {
  return ROLE_RANK[a.role] >= ROLE_RANK.manager && (a.principal.via !== 'api_key' || grants(a.principal.scopes, 'connectors:write'));
}

export function requireConnectorBinding(a: AgentAccess, what = 'adding a connector to an agent'): void {
  if (ROLE_RANK[a.role] < ROLE_RANK.manager) throw forbidden(`${what} requires the manager role or above`);
  if (a.principal.via === 'api_key' && !grants(a.principal.scopes, 'connectors:write')) {
    throw new AppError('FORBIDDEN', 'this API key lacks the connectors:write scope', { details: [{ field: 'scopes', problem: 'missing connectors:write' }] });
  }
}

export interface AgentAccess {
  principal: Principal;
  agent: AgentRow;
  role: WorkspaceRole;
}

export interface Access {
  principal(ctx: HandlerContext): Promise<Principal>;
  /** Loads the agent and checks the caller's role in its workspace (404 when fenced or missing). */
  agent(ctx: HandlerContext, agentId: string, op: AgentOp): Promise<AgentAccess>;
  /** Role (and scope) check for a workspace named in a request (404 when not a member). */
  workspace(p: Principal, workspaceId: string, op: AgentOp, what?: string): Promise<WorkspaceRole>;
}

export function createAccess(deps: Pick<AgentsDeps, 'sql' | 'auth'>): Access {
  const { auth, sql } = deps;
  async function role(a: Auth, p: Principal, workspaceId: string, min: WorkspaceRole, what: string): Promise<WorkspaceRole> {
    const r = await a.roleIn(p, workspaceId);
    if (!r) throw notFound(what);
    if (ROLE_RANK[r] < ROLE_RANK[min]) throw forbidden(`requires the ${min} role or above in the agent's workspace`);
    return r;
  }
  return {
    principal: (ctx) => auth.principal(ctx),
    async agent(ctx, agentId, op) {
      const principal = await auth.principal(ctx);
      requireAgentScope(principal, op);
      const id = pathId('agent', agentId);
      const agent = await getAgentRow(sql, id, ctx.signal);
      if (!agent) throw notFound('agent');
      const r = await role(auth, principal, agent.workspace_id, ROLE_FOR[op], 'agent');
      return { principal, agent, role: r };
    },
    workspace(p, workspaceId, op, what = 'workspace') {
      requireAgentScope(p, op);
      return role(auth, p, pathId(what, workspaceId), ROLE_FOR[op], what);
    },
  };
}
