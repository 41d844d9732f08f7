/**
 * Session start asks which connections its agent's connector tools are bound to are live right
 * now (the published snapshot cannot know of a later disconnect). Answered here, handed to the
 * voice domain as a function so it never reads connector tables itself.
 */
import type { Sql } from '../../shared/db/client.js';
import { isUuid } from '../../shared/ids.js';

/** Connection id -> provider id of the given ids that are active in `workspaceId` (others are simply absent). */
export async function liveConnections(sql: Sql, workspaceId: string, connectionIds: string[], signal?: AbortSignal): Promise<ReadonlyMap<string, string>> {
  // Hand-written bindings may hold anything: only uuids can match, and the tool count bounds the list.
  const ids = [...new Set(connectionIds.filter((id) => isUuid(id)).map((id) => id.toLowerCase()))];
  if (ids.length === 0 || !isUuid(workspaceId)) return new Map();
  // Not cancelled once started (cancelling raced postgres.js's parser, see agents/db.ts `run`).
  if (signal?.aborted) throw signal.reason;
  const rows = await sql<Array<{ id: string; provider_id: string }>>`
    select id, provider_id from connector_connections where workspace_id = ${workspaceId} and is_active and id = any(${ids}::uuid[])`;
  return new Map(rows.map((r) => [r.id, r.provider_id]));
}
