/** SQL of `agent_flows` (one draft flow per agent; `version` counts saves). */
import type { Sql } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { FlowGraphJson, FlowRow, FlowVariableJson } from '../types.js';

export async function getFlowRow(sql: Sql, agentId: string, signal?: AbortSignal): Promise<FlowRow | undefined> {
  const rows = await run(sql<FlowRow[]>`select * from agent_flows where agent_id = ${agentId}`, signal);
  return rows[0];
}

export async function putFlowRow(
  sql: Sql,
  f: { agent_id: string; id: string; graph: FlowGraphJson; variables: FlowVariableJson[] },
  signal?: AbortSignal,
): Promise<FlowRow> {
  const rows = await run(
    sql<FlowRow[]>`
      insert into agent_flows (agent_id, id, version, graph, variables)
      values (${f.agent_id}, ${f.id}, 1, ${sql.json(f.graph as never)}::jsonb, ${sql.json(f.variables as never)}::jsonb)
      on conflict (agent_id) do update set version = agent_flows.version + 1, graph = excluded.graph,
        variables = excluded.variables, updated_at = now()
      returning *`,
    signal,
  );
  return rows[0];
}
