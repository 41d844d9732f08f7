/**
 * SQL of the connectors domain. Listing queries never select `secret_enc`; only `secretOf`
 * does, for the one call that needs the credential. Tool switches are fenced by the
 * connection's workspace: a tool in another workspace that names this connection id by hand
 * is never touched.
 */
import type { Sql } from '../../shared/db/client.js';
import { COLS, type ConnectionRow } from '../../shared/connectors/connection-store.js';
import { keptBinding } from '../agents/tools/store.js';

export { getConnection, listConnections, secretOf, setHealth, type ConnectionRow, type HealthStatus } from '../../shared/connectors/connection-store.js';

export interface ConnectWrite {
  id: string;
  workspace_id: string;
  provider_id: string;
  account_label: string;
  auth_mode: 'api_key' | 'oauth';
  secret_enc: string;
  enabled_products: string[];
  /** OAuth: the access token's expiry (null: none given) and the granted scopes. Key connections: null and []. */
  token_expires_at?: Date | null;
  granted_scopes?: string[];
  now: Date;
}

/**
 * Connect or reconnect in place: the (workspace, provider) row keeps its id, takes the new
 * credential, becomes active and healthy, and the tools a disconnect switched off come back.
 */
export async function upsertConnection(sql: Sql, w: ConnectWrite): Promise<{ row: ConnectionRow; reactivated: number }> {
  return sql.begin(async (tx) => {
    const [row] = await tx<ConnectionRow[]>`
      insert into connector_connections (id, workspace_id, provider_id, account_label, auth_mode, is_active, health_status, health_detail,
        health_checked_at, enabled_products, token_expires_at, granted_scopes, secret_enc, created_at, updated_at)
      values (${w.id}, ${w.workspace_id}, ${w.provider_id}, ${w.account_label}, ${w.auth_mode}, true, 'ok', null,
        ${w.now}, ${w.enabled_products}, ${w.token_expires_at ?? null}, ${w.granted_scopes ?? []}, ${w.secret_enc}, ${w.now}, ${w.now})
      on conflict (workspace_id, provider_id) do update set
        account_label = excluded.account_label, auth_mode = excluded.auth_mode, is_active = true, health_status = 'ok',
        health_detail = null, health_checked_at = excluded.health_checked_at, enabled_products = excluded.enabled_products,
        token_expires_at = excluded.token_expires_at, granted_scopes = excluded.granted_scopes,
        secret_enc = excluded.secret_enc, updated_at = excluded.updated_at
      returning ${tx.unsafe(COLS)}`;
    const on = await tx`
      update agent_tools t set is_active = true, disabled_by_connection = false, updated_at = ${w.now}
      from agents a
      where a.id = t.agent_id and a.workspace_id = ${w.workspace_id}
        and t.connector_binding->>'connection_id' = ${row!.id} and t.disabled_by_connection`;
    return { row: row!, reactivated: on.count };
  });
}

/** Purges the secret, marks the row inactive and switches off (not deletes) every bound tool. */
export async function disconnect(sql: Sql, c: { id: string; workspace_id: string }, now: Date): Promise<number> {
  return sql.begin(async (tx) => {
    await tx`
      update connector_connections set is_active = false, secret_enc = null, token_expires_at = null, health_status = 'reconnect_needed',
        health_detail = 'disconnected', health_checked_at = ${now}, updated_at = ${now}
      where id = ${c.id}`;
    const off = await tx`
      update agent_tools t set is_active = false, disabled_by_connection = true, updated_at = ${now}
      from agents a
      where a.id = t.agent_id and a.workspace_id = ${c.workspace_id}
        and t.connector_binding->>'connection_id' = ${c.id} and t.is_active`;
    return off.count;
  });
}

export interface ConnectionAgentRow {
  agent_id: string;
  agent_name: string;
  tool_id: string;
  tool_name: string;
  action_count: number;
}

/** Bounded by the tools-per-agent and agents-per-workspace limits of migration 0004. */
export async function connectionAgents(sql: Sql, c: { id: string; workspace_id: string }): Promise<ConnectionAgentRow[]> {
  return sql<ConnectionAgentRow[]>`
    select a.id as agent_id, a.name as agent_name, t.id as tool_id, t.name as tool_name,
      coalesce(jsonb_array_length(t.connector_binding->'actions'), 0)::int as action_count
    from agent_tools t join agents a on a.id = t.agent_id
    where a.workspace_id = ${c.workspace_id} and t.connector_binding->>'connection_id' = ${c.id}
    order by a.name, t.name
    limit 1000`;
}

/** The agent a legacy agent-connector route names: enough to fence it by workspace. */
export async function agentRef(sql: Sql, agentId: string): Promise<{ id: string; workspace_id: string } | undefined> {
  const [row] = await sql<Array<{ id: string; workspace_id: string }>>`select id, workspace_id from agents where id = ${agentId}`;
  return row;
}

export interface AgentConnectorTool {
  tool_id: string;
  tool_name: string;
  connection_id: string;
  bound_actions: string[];
}

/** The agent's switched-on connector tools (bounded by the tools-per-agent limit of migration 0004). */
export async function activeConnectorTools(sql: Sql, agentId: string): Promise<AgentConnectorTool[]> {
  return sql<AgentConnectorTool[]>`
    select t.id as tool_id, t.name as tool_name, t.connector_binding->>'connection_id' as connection_id,
      coalesce(array(select a->>'name' from jsonb_array_elements(t.connector_binding->'actions') a), '{}') as bound_actions
    from agent_tools t
    where t.agent_id = ${agentId} and t.is_active and t.connector_binding is not null
    order by t.created_at, t.id`;
}

export interface EnableWrite {
  agent_id: string;
  connection_id: string;
  /** Used only when the agent has no tool bound to the connection yet (then: like `connectors` on PUT /agents/{id}). */
  tool: { id: string; name: string; description: string; connector_binding: unknown };
  now: Date;
}

/**
 * Enable a connection on an agent: its tools bound to the connection are switched back on (a
 * restricted action list is kept); without one, a connector tool named by the provider is
 * created, or a same-named tool re-bound and re-activated. Bumps the agent's draft `updated_at`.
 * False, nothing written: the connection was disconnected meanwhile.
 */
export async function enableOnAgent(sql: Sql, w: EnableWrite): Promise<boolean> {
  return sql.begin(async (tx) => {
    // Locks the connection row against a concurrent disconnect (which updates it): never a tool switched on over a purged secret.
    const [live] = await tx<Array<{ is_active: boolean }>>`select is_active from connector_connections where id = ${w.connection_id} for share`;
    if (!live?.is_active) return false;
    const on = await tx`
      update agent_tools set is_active = true, disabled_by_connection = false, updated_at = ${w.now}
      where agent_id = ${w.agent_id} and connector_binding->>'connection_id' = ${w.connection_id}`;
    if (on.count === 0) {
      await tx`
        insert into agent_tools (id, agent_id, name, description, connector_binding, is_active)
        values (${w.tool.id}, ${w.agent_id}, ${w.tool.name}, ${w.tool.description}, ${tx.json(w.tool.connector_binding as never)}::jsonb, true)
        on conflict (agent_id, name) do update set
          connector_binding = ${keptBinding(tx)}, is_active = true, disabled_by_connection = false, updated_at = ${w.now}`;
    }
    await tx`update agents set updated_at = ${w.now} where id = ${w.agent_id}`;
    return true;
  });
}

/**
 * Disable by hand: the agent's tools bound to the connection are switched off (not deleted) and
 * NOT marked `disabled_by_connection`, so a reconnect leaves them off. Answers how many tools
 * are bound at all (0: the connection was never enabled on this agent).
 */
export async function disableOnAgent(sql: Sql, agentId: string, connectionId: string, now: Date): Promise<number> {
  return sql.begin(async (tx) => {
    const bound = await tx`
      update agent_tools set is_active = false, disabled_by_connection = false,
        updated_at = case when is_active then ${now} else updated_at end
      where agent_id = ${agentId} and connector_binding->>'connection_id' = ${connectionId}`;
    if (bound.count > 0) await tx`update agents set updated_at = ${now} where id = ${agentId}`;
    return bound.count;
  });
}

/** The sealed credentials of a workspace's live OAuth connections (to revoke them when the workspace goes). */
export async function oauthSecretsOf(sql: Sql, workspaceId: string): Promise<Array<{ provider_id: string; secret_enc: string }>> {
  return sql<Array<{ provider_id: string; secret_enc: string }>>`
    select provider_id, secret_enc from connector_connections
    where workspace_id = ${workspaceId} and auth_mode = 'oauth' and is_active and secret_enc is not null`;
}
