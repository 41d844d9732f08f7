/** SQL of the `agents` table (the draft agent fields). */
import type { Sql, SqlOrTx } from '../../../shared/db/client.js';
import { ClientGoneError, run } from '../db.js';
import type { AgentFields, AgentRow } from '../types.js';

const COLUMNS = `id, workspace_id, user_id, name, description, system_prompt, welcome_message, language, max_turns,
  connection_type, interrupt_enabled, vad_threshold, silence_timeout_ms, is_active, allow_human_transfer, mode,
  metadata, connectors, live_version, created_at, updated_at`;

export async function getAgentRow(sql: Sql, id: string, signal?: AbortSignal): Promise<AgentRow | undefined> {
  const rows = await run(sql.unsafe<AgentRow[]>(`select ${COLUMNS} from agents where id = $1`, [id]), signal);
  return rows[0];
}

export async function insertAgentRow(sql: Sql, row: { id: string; workspace_id: string; user_id: string } & AgentFields, signal?: AbortSignal): Promise<AgentRow> {
  const rows = await run(
    sql<AgentRow[]>`
      insert into agents (id, workspace_id, user_id, name, description, system_prompt, welcome_message, language, max_turns,
        connection_type, interrupt_enabled, vad_threshold, silence_timeout_ms, is_active, allow_human_transfer, mode, metadata, connectors)
      values (${row.id}, ${row.workspace_id}, ${row.user_id}, ${row.name}, ${row.description}, ${row.system_prompt},
        ${row.welcome_message}, ${row.language}, ${row.max_turns}, ${row.connection_type}, ${row.interrupt_enabled},
        ${row.vad_threshold}, ${row.silence_timeout_ms}, ${row.is_active}, ${row.allow_human_transfer}, ${row.mode},
        ${sql.json(row.metadata)}::jsonb, ${row.connectors}::text[])
      returning ${sql.unsafe(COLUMNS)}`,
    signal,
  );
  return rows[0];
}

export type AgentPatch = Partial<Omit<AgentFields, 'connectors'>> & { add_connectors?: string[] };

/** Only the fields present change; `add_connectors` is merged into `connectors` (order kept, no duplicates, case-insensitively: the first spelling stays). */
export async function updateAgentRow(sql: Sql, id: string, p: AgentPatch, signal?: AbortSignal): Promise<AgentRow | undefined> {
  const n = <T>(v: T | undefined) => (v === undefined ? null : v);
  const rows = await run(
    sql<AgentRow[]>`
      update agents set
        name = coalesce(${n(p.name)}, name),
        description = coalesce(${n(p.description)}, description),
        system_prompt = coalesce(${n(p.system_prompt)}, system_prompt),
        welcome_message = coalesce(${n(p.welcome_message)}, welcome_message),
        language = coalesce(${n(p.language)}, language),
        max_turns = coalesce(${n(p.max_turns)}::integer, max_turns),
        connection_type = coalesce(${n(p.connection_type)}, connection_type),
        interrupt_enabled = coalesce(${n(p.interrupt_enabled)}::boolean, interrupt_enabled),
        vad_threshold = coalesce(${n(p.vad_threshold)}::double precision, vad_threshold),
        silence_timeout_ms = coalesce(${n(p.silence_timeout_ms)}::integer, silence_timeout_ms),
        is_active = coalesce(${n(p.is_active)}::boolean, is_active),
        allow_human_transfer = coalesce(${n(p.allow_human_transfer)}::boolean, allow_human_transfer),
        mode = coalesce(${n(p.mode)}, mode),
        metadata = coalesce(${p.metadata === undefined ? null : sql.json(p.metadata)}::jsonb, metadata),
        connectors = array(
          select (array_agg(c order by i))[1] from unnest(connectors || ${p.add_connectors ?? []}::text[]) with ordinality as t(c, i)
          group by lower(c) order by min(i)),
        updated_at = now()
      where id = ${id}
      returning ${sql.unsafe(COLUMNS)}`,
    signal,
  );
  return rows[0];
}

/** Campaigns named in the 409 of a refused delete. */
const MAX_NAMED_CAMPAIGNS = 5;

export type DeleteAgentResult =
  | { kind: 'deleted' }
  | { kind: 'not_found' }
  /** Campaigns of the agent that are not finished: how many, and the oldest few ids. */
  | { kind: 'campaigns_unfinished'; count: number; ids: string[] };

/**
 * Deletes the agent unless one of its campaigns is not finished (draft, scheduled, running,
 * paused: anything but the campaigns domain's final states, completed and cancelled). Finished
 * campaigns keep their history with `agent_id` null (migration 0029); before, the delete cascaded
 * to every campaign and its contacts' results, a running campaign included. The agent row is
 * locked first: a campaign created for it meanwhile (its foreign-key check locks this row) either
 * committed before and is counted here, or waits and then finds no agent.
 */
export async function deleteAgentRow(sql: Sql, id: string, signal?: AbortSignal): Promise<DeleteAgentResult> {
  if (signal?.aborted) throw new ClientGoneError();
  return sql.begin(async (tx): Promise<DeleteAgentResult> => {
    const [agent] = await tx`select id from agents where id = ${id} for update`;
    if (!agent) return { kind: 'not_found' };
    const unfinished = await tx<{ id: string; n: number }[]>`
      select id, count(*) over ()::int as n from campaigns
      where agent_id = ${id} and status not in ('completed', 'cancelled')
      order by created_at, id limit ${MAX_NAMED_CAMPAIGNS}`;
    if (unfinished.length > 0) return { kind: 'campaigns_unfinished', count: unfinished[0]!.n, ids: unfinished.map((c) => c.id) };
    await tx`delete from agents where id = ${id}`;
    return { kind: 'deleted' };
  });
}

/** Marks the draft as changed (child-table writes): `updated_at` tells clients the draft moved. */
export async function touchAgent(sql: SqlOrTx, id: string, signal?: AbortSignal): Promise<void> {
  await run(sql`update agents set updated_at = now() where id = ${id}`, signal);
}

export async function listAgentRows(
  sql: Sql,
  workspaceIds: string[],
  page: { limit: number; offset: number },
  signal?: AbortSignal,
): Promise<{ rows: AgentRow[]; total: number }> {
  if (workspaceIds.length === 0) return { rows: [], total: 0 };
  const [rows, [count]] = await Promise.all([
    run(
      sql.unsafe<AgentRow[]>(
        `select ${COLUMNS} from agents where workspace_id = any($1::uuid[])
         order by created_at desc, id desc limit $2 offset $3`,
        [workspaceIds, page.limit, page.offset] as never,
      ),
      signal,
    ),
    run(sql<{ total: number }[]>`select count(*)::int as total from agents where workspace_id = any(${workspaceIds}::uuid[])`, signal),
  ]);
  return { rows, total: count.total };
}
