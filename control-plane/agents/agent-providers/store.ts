/** SQL of `agent_providers` (one row per agent and provider type; `api_key_enc` encrypted). */
import type { Sql, SqlOrTx } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { AgentProviderRow, ProviderType } from '../types.js';

const ORDER = `array_position(array['llm','asr','tts'], provider_type)`;

export function listProviderRows(sql: Sql, agentId: string, signal?: AbortSignal): Promise<AgentProviderRow[]> {
  return run(sql.unsafe<AgentProviderRow[]>(`select * from agent_providers where agent_id = $1 order by ${ORDER}`, [agentId]), signal);
}

export async function getProviderRow(sql: SqlOrTx, agentId: string, type: ProviderType, signal?: AbortSignal): Promise<AgentProviderRow | undefined> {
  const rows = await run(sql<AgentProviderRow[]>`select * from agent_providers where agent_id = ${agentId} and provider_type = ${type}`, signal);
  return rows[0];
}

/** Creates or replaces the provider of `provider_type` (the row id survives a replace). */
export async function upsertProviderRow(
  sql: SqlOrTx,
  row: Pick<AgentProviderRow, 'id' | 'agent_id' | 'provider_type' | 'provider_name' | 'api_key_enc' | 'model_name' | 'base_url'>,
  signal?: AbortSignal,
): Promise<AgentProviderRow> {
  const rows = await run(
    sql<AgentProviderRow[]>`
      insert into agent_providers (id, agent_id, provider_type, provider_name, api_key_enc, model_name, base_url)
      values (${row.id}, ${row.agent_id}, ${row.provider_type}, ${row.provider_name}, ${row.api_key_enc}, ${row.model_name}, ${row.base_url})
      on conflict (agent_id, provider_type) do update set
        provider_name = excluded.provider_name, api_key_enc = excluded.api_key_enc,
        model_name = excluded.model_name, base_url = excluded.base_url, updated_at = now()
      returning *`,
    signal,
  );
  return rows[0];
}

export async function deleteProviderRow(sql: Sql, agentId: string, type: ProviderType, signal?: AbortSignal): Promise<boolean> {
  const rows = await run(sql`delete from agent_providers where agent_id = ${agentId} and provider_type = ${type} returning id`, signal);
  return rows.length > 0;
}
