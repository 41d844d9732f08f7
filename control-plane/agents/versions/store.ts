/**
 * SQL of `agent_versions` and the live pointer on `agents`. Publishing reads the whole draft in ONE
 * statement (one consistent snapshot of every draft table) while holding the agent row lock, so
 * concurrent publishers get consecutive numbers and each version is a coherent draft.
 */
import { isReservedToolName } from '../../../shared/agent/reserved-tools.js';
import { AppError, notFound } from '../../../shared/errors.js';
import type postgres from 'postgres';
import type { Sql } from '../../../shared/db/client.js';
import { run } from '../db.js';
import type { AgentSnapshot, SnapshotProvider } from '../types.js';
import { buildSnapshot, type RawDraft } from './snapshot.js';

export interface VersionRow {
  version_number: number;
  published_at: Date;
  published_by: string | null;
}

export interface PublishResult {
  version_number: number;
  published_at: Date;
}

/** Thrown when publishing an agent whose mode is `flow` without a valid flow. */
export function flowNotPublishable(): AppError {
  return new AppError('CONFLICT', 'mode is flow but the flow is missing or invalid: fix the flow or switch mode to single_prompt', {
    details: [{ field: 'flow', problem: 'missing or invalid while mode is flow' }],
  });
}

/**
 * A flow's tool nodes name tools the agent has (active HTTP tools, connector actions, the knowledge
 * search). Checked at publish, not by the flow validator: tools change after a flow is saved, and
 * a node naming a missing tool only failed at call time ("tool X is not among the agent's tools").
 */
function assertFlowToolsExist(snapshot: AgentSnapshot): void {
  const names = new Set<string>(['search_knowledge']);
  for (const t of snapshot.tools) {
    if (!t.is_active) continue;
    if (t.connector_binding) for (const a of t.connector_binding.actions) names.add(a.name);
    // A tool named like one of the platform's own functions cannot be a node's tool: a flow call
    // offers the built-in under that name (shared/agent/reserved-tools.ts).
    else if (!isReservedToolName(t.name)) names.add(t.name);
  }
  const missing = (snapshot.flow?.graph.nodes ?? []).filter((n) => n.type === 'tool' && !names.has(String(n.config?.tool_name ?? '')));
  if (!missing.length) return;
  const list = missing.map((n) => `${n.id} (${String(n.config?.tool_name ?? '')})`).join(', ');
  throw new AppError('CONFLICT', `the flow's tool nodes name tools the agent does not have: ${list}; add the tools or change the nodes`, {
    details: [{ field: 'flow', problem: `tool nodes naming no active tool: ${list}` }],
  });
}

export async function publishDraft(sql: Sql, agentId: string, publishedBy: string, fallbacks: SnapshotProvider[]): Promise<PublishResult> {
  return sql.begin(async (tx) => {
    const locked = await tx`select id from agents where id = ${agentId} for update`;
    if (!locked.length) throw notFound('agent');
    const snapshot = await readDraftSnapshot(tx, agentId, fallbacks);
    if (snapshot.agent.mode === 'flow' && !snapshot.flow?.is_valid) throw flowNotPublishable();
    if (snapshot.agent.mode === 'flow') assertFlowToolsExist(snapshot);
    const [v] = await tx<PublishResult[]>`
      insert into agent_versions (agent_id, version_number, snapshot, published_by, published_at)
      values (${agentId}, (select coalesce(max(version_number), 0) + 1 from agent_versions where agent_id = ${agentId}),
        ${tx.json(snapshot as never)}::jsonb, ${publishedBy}, clock_timestamp())
      returning version_number, published_at`;
    // clock_timestamp(), not now(): now() is when the transaction began, before it waited for the
    // agent's lock, so concurrent publishes got times out of step with their version numbers.
    await tx`update agents set live_version = ${v.version_number}, live_since = clock_timestamp(),
      live_phone_number = ${snapshot.telephony?.carrier_phone_number ?? null} where id = ${agentId}`;
    return v;
  }) as Promise<PublishResult>;
}

/**
 * The whole draft as a snapshot, read in ONE statement (one consistent view of every draft table).
 * Publishing calls it under the agent row lock; simulation tests of the draft (version 0) freeze
 * it into their run (control-plane/simtests).
 */
export async function readDraftSnapshot(sql: Sql | postgres.TransactionSql<Record<string, unknown>>, agentId: string, fallbacks: SnapshotProvider[]): Promise<AgentSnapshot> {
  const [raw] = await sql<RawDraft[]>`
      select
        (select row_to_json(a) from agents a where a.id = ${agentId}) as agent,
        (select coalesce(json_agg(p order by p.provider_type), '[]'::json) from agent_providers p where p.agent_id = ${agentId}) as providers,
        (select coalesce(json_agg(t order by t.created_at, t.id), '[]'::json) from agent_tools t where t.agent_id = ${agentId}) as tools,
        (select coalesce(json_agg(k order by k.created_at, k.id), '[]'::json) from agent_knowledge_bases k where k.agent_id = ${agentId}) as kbs,
        (select row_to_json(f) from agent_flows f where f.agent_id = ${agentId}) as flow,
        (select row_to_json(t) from agent_telephony t where t.agent_id = ${agentId}) as telephony`;
  if (!raw?.agent) throw notFound('agent');
  return buildSnapshot(raw, fallbacks);
}

/** Makes version `n` live again; undefined when the agent has no such version. */
export async function rollbackTo(sql: Sql, agentId: string, n: number): Promise<PublishResult | undefined> {
  return sql.begin(async (tx) => {
    await tx`select id from agents where id = ${agentId} for update`;
    const [v] = await tx<Array<PublishResult & { phone: string | null }>>`
      select version_number, published_at, snapshot->'telephony'->>'carrier_phone_number' as phone
      from agent_versions where agent_id = ${agentId} and version_number = ${n}`;
    if (!v) return undefined;
    await tx`update agents set live_version = ${n}, live_since = clock_timestamp(), live_phone_number = ${v.phone} where id = ${agentId}`;
    return { version_number: v.version_number, published_at: v.published_at };
  }) as Promise<PublishResult | undefined>;
}

export async function listVersionRows(
  sql: Sql,
  agentId: string,
  page: { limit: number; offset: number },
  signal?: AbortSignal,
): Promise<{ rows: VersionRow[]; total: number }> {
  const [rows, [count]] = await Promise.all([
    run(
      sql<VersionRow[]>`select version_number, published_at, published_by from agent_versions where agent_id = ${agentId}
        order by version_number desc limit ${page.limit} offset ${page.offset}`,
      signal,
    ),
    run(sql<{ total: number }[]>`select count(*)::int as total from agent_versions where agent_id = ${agentId}`, signal),
  ]);
  return { rows, total: count.total };
}

export interface LiveRow {
  id: string;
  live_version: number | null;
  snapshot: AgentSnapshot | null;
  published_at: Date | null;
}

export async function liveRow(sql: Sql, agentId: string, signal?: AbortSignal): Promise<LiveRow | undefined> {
  const rows = await run(
    sql<LiveRow[]>`select a.id, a.live_version, v.snapshot, v.published_at
      from agents a left join agent_versions v on v.agent_id = a.id and v.version_number = a.live_version
      where a.id = ${agentId}`,
    signal,
  );
  return rows[0];
}

/** Agents whose LIVE version carries the number; the one whose draft also holds it wins, then the most recently made live. */
export async function liveAgentIdByNumber(sql: Sql, e164: string, signal?: AbortSignal): Promise<string | undefined> {
  const rows = await run(
    sql<{ id: string }[]>`select a.id from agents a
      left join agent_telephony t on t.agent_id = a.id and t.carrier_phone_number = ${e164}
      where a.live_phone_number = ${e164}
      order by (t.agent_id is not null) desc, a.live_since desc nulls last limit 1`,
    signal,
  );
  return rows[0]?.id;
}

export async function memoryItemsFor(sql: Sql, workspaceId: string, ids: string[], signal?: AbortSignal) {
  if (ids.length === 0) return [];
  return run(
    sql<Array<{ id: string; title: string; content: string; content_type: string }>>`
      select id, title, content, content_type from memory_items
      where workspace_id = ${workspaceId} and is_active and id = any(${ids}::uuid[])`,
    signal,
  );
}
