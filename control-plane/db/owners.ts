/**
 * Which workspace owns a row: the first step of every fenced read or write (the caller's role is
 * checked against it; undefined means no such row, answered as 404 like another tenant's).
 */
import type { Sql } from '../../shared/db/client.js';

export async function agentWorkspace(sql: Sql, agentId: string): Promise<string | undefined> {
  const [row] = await sql<{ workspace_id: string }[]>`select workspace_id from agents where id = ${agentId}`;
  return row?.workspace_id;
}

export async function conversationWorkspace(sql: Sql, conversationId: string): Promise<string | undefined> {
  const [row] = await sql<{ workspace_id: string }[]>`select workspace_id from conversations where id = ${conversationId}`;
  return row?.workspace_id;
}
