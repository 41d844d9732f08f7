/** SQL of `agent_knowledge_bases`: bindings of workspace memory items to an agent. */
import type { Sql } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { KbBindingRow, KbMode } from '../types.js';

const SELECT = `select b.*, m.title from agent_knowledge_bases b join memory_items m on m.id = b.knowledge_base_id`;

export function listKbRows(sql: Sql, agentId: string, signal?: AbortSignal): Promise<KbBindingRow[]> {
  return run(sql.unsafe<KbBindingRow[]>(`${SELECT} where b.agent_id = $1 order by b.created_at, b.id`, [agentId]), signal);
}

/** By binding id or by the bound memory item id. */
export async function getKbRow(sql: Sql, agentId: string, kbId: string, signal?: AbortSignal): Promise<KbBindingRow | undefined> {
  const rows = await run(
    sql.unsafe<KbBindingRow[]>(`${SELECT} where b.agent_id = $1 and (b.id = $2 or b.knowledge_base_id = $2)`, [agentId, kbId]),
    signal,
  );
  return rows[0];
}

export async function memoryItemInWorkspace(sql: Sql, workspaceId: string, itemId: string, signal?: AbortSignal): Promise<boolean> {
  const rows = await run(sql`select 1 from memory_items where id = ${itemId} and workspace_id = ${workspaceId}`, signal);
  return rows.length > 0;
}

/** Binding a memory item twice is idempotent: the existing binding gets the new mode and is re-activated. */
export async function upsertKbRow(sql: Sql, row: { id: string; agent_id: string; knowledge_base_id: string; mode: KbMode }, signal?: AbortSignal): Promise<string> {
  const [r] = await run(
    sql<{ id: string }[]>`
      insert into agent_knowledge_bases (id, agent_id, knowledge_base_id, mode)
      values (${row.id}, ${row.agent_id}, ${row.knowledge_base_id}, ${row.mode})
      on conflict (agent_id, knowledge_base_id) do update set mode = excluded.mode, is_active = true, updated_at = now()
      returning id`,
    signal,
  );
  return r.id;
}

export async function updateKbRow(sql: Sql, id: string, p: { mode?: KbMode; is_active?: boolean }, signal?: AbortSignal): Promise<void> {
  await run(
    sql`update agent_knowledge_bases set mode = coalesce(${p.mode ?? null}, mode),
          is_active = coalesce(${p.is_active ?? null}::boolean, is_active), updated_at = now()
        where id = ${id}`,
    signal,
  );
}

export async function deleteKbRow(sql: Sql, id: string, signal?: AbortSignal): Promise<void> {
  await run(sql`delete from agent_knowledge_bases where id = ${id}`, signal);
}
