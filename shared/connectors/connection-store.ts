/**
 * The connection rows both sides read: the control plane (connect, list, execute route) and the
 * engine (connector tools on calls). Listing queries never select `secret_enc`; only `secretOf`
 * does, for the one call that needs the credential.
 */
import type { Sql, SqlOrTx } from '../db/client.js';

export type HealthStatus = 'ok' | 'reconnect_needed' | 'error';

export interface ConnectionRow {
  id: string;
  workspace_id: string;
  provider_id: string;
  account_label: string;
  auth_mode: 'api_key' | 'oauth';
  is_active: boolean;
  health_status: HealthStatus;
  health_detail: string | null;
  health_checked_at: Date | null;
  token_expires_at: Date | null;
  granted_scopes: string[];
  enabled_products: string[];
  created_at: Date;
  updated_at: Date;
}

export const COLS = 'id, workspace_id, provider_id, account_label, auth_mode, is_active, health_status, health_detail, health_checked_at, token_expires_at, granted_scopes, enabled_products, created_at, updated_at';

/** Connections per workspace: one per provider (unique index), so the catalog bounds the list. */
export async function listConnections(sql: Sql, workspaceId: string): Promise<ConnectionRow[]> {
  return sql<ConnectionRow[]>`select ${sql.unsafe(COLS)} from connector_connections where workspace_id = ${workspaceId} order by provider_id`;
}

export async function getConnection(sql: Sql, id: string): Promise<ConnectionRow | undefined> {
  const [row] = await sql<ConnectionRow[]>`select ${sql.unsafe(COLS)} from connector_connections where id = ${id}`;
  return row;
}

export async function secretOf(sql: Sql, id: string): Promise<string | undefined> {
  const [row] = await sql<Array<{ secret_enc: string | null }>>`select secret_enc from connector_connections where id = ${id} and is_active`;
  return row?.secret_enc ?? undefined;
}

/** Health after a real vendor call; a disconnected row keeps its own status. */
export async function setHealth(sql: SqlOrTx, id: string, status: HealthStatus, detail: string | null, now: Date): Promise<void> {
  await sql`
    update connector_connections set health_status = ${status}, health_detail = ${detail}, health_checked_at = ${now}, updated_at = ${now}
    where id = ${id} and is_active`;
}

/** The sealed credential with its access-token expiry (OAuth connections refresh from it). */
export async function credentialOf(sql: Sql, id: string): Promise<{ secret_enc: string; token_expires_at: Date | null } | undefined> {
  const [row] = await sql<Array<{ secret_enc: string | null; token_expires_at: Date | null }>>`
    select secret_enc, token_expires_at from connector_connections where id = ${id} and is_active`;
  return row?.secret_enc ? { secret_enc: row.secret_enc, token_expires_at: row.token_expires_at } : undefined;
}

/**
 * Stores refreshed tokens only if the credential is still the one that was refreshed (compare
 * and swap on the sealed value): a concurrent refresh or a disconnect in between wins, and
 * false tells the caller to read the current credential instead.
 */
export async function storeRefreshed(sql: Sql, id: string, w: { previous: string; next: string; expiresAt: Date | null; now: Date }): Promise<boolean> {
  const done = await sql`
    update connector_connections set secret_enc = ${w.next}, token_expires_at = ${w.expiresAt}, updated_at = ${w.now}
    where id = ${id} and is_active and secret_enc = ${w.previous}`;
  return done.count === 1;
}
