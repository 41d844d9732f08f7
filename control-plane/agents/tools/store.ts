/** SQL of `agent_tools` (name unique per agent; `auth_token_enc` encrypted). */
import type { Sql, SqlOrTx } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { ToolRow } from '../types.js';

/** jsonb parameter (postgres.js would double-encode a pre-stringified value); null stays SQL null. */
const jsonb = (sql: SqlOrTx, v: unknown) => (v === null || v === undefined ? null : sql.json(v as never));

export type ToolWrite = Omit<ToolRow, 'created_at' | 'updated_at'>;

export function listToolRows(sql: Sql, agentId: string, signal?: AbortSignal): Promise<ToolRow[]> {
  return run(sql<ToolRow[]>`select * from agent_tools where agent_id = ${agentId} order by created_at, id`, signal);
}

export async function getToolRow(sql: SqlOrTx, agentId: string, toolId: string, signal?: AbortSignal): Promise<ToolRow | undefined> {
  const rows = await run(sql<ToolRow[]>`select * from agent_tools where agent_id = ${agentId} and id = ${toolId}`, signal);
  return rows[0];
}


export async function insertToolRow(sql: Sql, t: ToolWrite, signal?: AbortSignal): Promise<ToolRow> {
  const rows = await run(
    sql<ToolRow[]>`
      insert into agent_tools (id, agent_id, name, description, function_schema, endpoint_url, http_method, headers, auth_type,
        auth_token_enc, request_body, response_path, timeout_ms, retry_count, is_active, connector_binding)
      values (${t.id}, ${t.agent_id}, ${t.name}, ${t.description}, ${jsonb(sql, t.function_schema)}::jsonb, ${t.endpoint_url},
        ${t.http_method}, ${jsonb(sql, t.headers)}::jsonb, ${t.auth_type}, ${t.auth_token_enc}, ${jsonb(sql, t.request_body)}::jsonb,
        ${t.response_path}, ${t.timeout_ms}, ${t.retry_count}, ${t.is_active}, ${jsonb(sql, t.connector_binding)}::jsonb)
      returning *`,
    signal,
  );
  return rows[0];
}

/** Writes the complete tool (the handler merged the request into the stored one). */
export async function updateToolRow(sql: SqlOrTx, t: ToolWrite, signal?: AbortSignal): Promise<ToolRow | undefined> {
  const rows = await run(
    sql<ToolRow[]>`
      update agent_tools set name = ${t.name}, description = ${t.description}, function_schema = ${jsonb(sql, t.function_schema)}::jsonb,
        endpoint_url = ${t.endpoint_url}, http_method = ${t.http_method}, headers = ${jsonb(sql, t.headers)}::jsonb,
        auth_type = ${t.auth_type}, auth_token_enc = ${t.auth_token_enc}, request_body = ${jsonb(sql, t.request_body)}::jsonb,
        response_path = ${t.response_path}, timeout_ms = ${t.timeout_ms}, retry_count = ${t.retry_count},
        is_active = ${t.is_active}, connector_binding = ${jsonb(sql, t.connector_binding)}::jsonb, updated_at = now()
      where id = ${t.id} and agent_id = ${t.agent_id}
      returning *`,
    signal,
  );
  return rows[0];
}

export async function deleteToolRow(sql: Sql, agentId: string, toolId: string, signal?: AbortSignal): Promise<boolean> {
  const rows = await run(sql`delete from agent_tools where agent_id = ${agentId} and id = ${toolId} returning id`, signal);
  return rows.length > 0;
}

/**
 * `connectors` on `PUT /agents/{id}` (spec rule 5): a same-named tool, disabled or not, is
 * re-bound and re-activated; otherwise one is created. Idempotent, so a retried PUT is safe.
 */
/**
 * A same-named connector tool is re-bound, its settings intact (spec doc 1, connector tool states:
 * "tool active again, settings intact | re-bound to the live connection"): only the binding's
 * `connection_id` changes; its action list, descriptions and `fixed` values stay. A tool without
 * a binding never gets here (the caller refuses a same-named HTTP tool first).
 */
export function keptBinding(sql: SqlOrTx) {
  return sql`case when agent_tools.connector_binding is null then excluded.connector_binding
    else jsonb_set(agent_tools.connector_binding, '{connection_id}', excluded.connector_binding->'connection_id') end`;
}

export async function upsertConnectorTool(
  sql: Sql,
  t: { id: string; agent_id: string; name: string; description: string; connector_binding: ToolRow['connector_binding'] },
  signal?: AbortSignal,
): Promise<void> {
  await run(
    sql`
      insert into agent_tools (id, agent_id, name, description, connector_binding, is_active)
      values (${t.id}, ${t.agent_id}, ${t.name}, ${t.description}, ${jsonb(sql, t.connector_binding)}::jsonb, true)
      on conflict (agent_id, name) do update set
        connector_binding = ${keptBinding(sql)}, is_active = true, disabled_by_connection = false, updated_at = now()`,
    signal,
  );
}
