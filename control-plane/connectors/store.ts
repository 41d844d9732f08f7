/**
 * SQL of the connectors domain. Listing queries never select `secret_enc`; only `secretOf`
 * does, for the one call that needs the credential. Tool switches are fenced by the
 * connection's workspace: a tool in another workspace that names this connection id by hand
 * is never touched.
 */
import type { Sql } from '../../shared/db/client.js';
import { COLS, type ConnectionRow } from '../../shared/connectors/connection-store.js';

export { getConnection, listConnections, secretOf, setHealth, type ConnectionRow, type HealthStatus } from '../../shared/connectors/connection-store.js';

export interface ConnectWrite {
  id: string;
  workspace_id: string;
  provider_id: string;
  account_label: string;
  auth_mode: 'api_key' | 'oauth';
  secret_enc: string;
  enabled_products: string[];
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
        health_checked_at, enabled_products, secret_enc, created_at, updated_at)
      values (${w.id}, ${w.workspace_id}, ${w.provider_id}, ${w.account_label}, ${w.auth_mode}, true, 'ok', null,
        ${w.now}, ${w.enabled_products}, ${w.secret_enc}, ${w.now}, ${w.now})
      on conflict (workspace_id, provider_id) do update set
        account_label = excluded.account_label, auth_mode = excluded.auth_mode, is_active = true, health_status = 'ok',
        health_detail = null, health_checked_at = excluded.health_checked_at, enabled_products = excluded.enabled_products,
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
      update connector_connections set is_active = false, secret_enc = null, health_status = 'reconnect_needed',
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
