/**
 * SQL of the webhooks domain: settings per workspace, deliveries (one per event, body stored once)
 * and their attempts. Every read is fenced by workspace by the caller.
 */
import type { Sql, SqlOrTx } from '../../shared/db/client.js';

export const DELIVERY_STATUSES = ['pending', 'in_flight', 'delivered', 'dead', 'skipped'] as const;
export type DeliveryStatus = (typeof DELIVERY_STATUSES)[number];

export interface SettingsRow {
  workspace_id: string;
  webhook_url: string | null;
  secret_enc: string | null;
}

export interface DeliveryRow {
  id: string;
  workspace_id: string;
  event_id: string;
  event_type: string;
  test: boolean;
  call_id: string | null;
  status: DeliveryStatus;
  body: string;
  attempts: number;
  next_attempt_at: Date | null;
  last_status_code: number | null;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
  updated_at: Date;
}

export interface AttemptRow {
  id: string;
  delivery_id: string;
  n: number;
  started_at: Date;
  status_code: number | null;
  latency_ms: number;
  error: string | null;
  response_excerpt: string | null;
}

/** Transaction-scoped lock on one workspace's webhook settings and test pings (released at commit). */
export async function lockWorkspaceWebhooks(tx: SqlOrTx, workspaceId: string): Promise<void> {
  await tx`select pg_advisory_xact_lock(hashtextextended(${'webhooks:' + workspaceId}, 0))`;
}

export async function getSettings(sql: SqlOrTx, workspaceId: string): Promise<SettingsRow | undefined> {
  const [row] = await sql<SettingsRow[]>`select workspace_id, webhook_url, secret_enc from webhook_settings where workspace_id = ${workspaceId}`;
  return row;
}

export async function putSettings(sql: SqlOrTx, workspaceId: string, patch: { url?: string | null; secretEnc?: string }, now: Date): Promise<SettingsRow> {
  const url = patch.url === undefined ? null : patch.url;
  const [row] = await sql<SettingsRow[]>`
    insert into webhook_settings (workspace_id, webhook_url, secret_enc, updated_at)
    values (${workspaceId}, ${url}, ${patch.secretEnc ?? null}, ${now})
    on conflict (workspace_id) do update set
      webhook_url = case when ${patch.url !== undefined} then excluded.webhook_url else webhook_settings.webhook_url end,
      secret_enc = coalesce(excluded.secret_enc, webhook_settings.secret_enc),
      updated_at = excluded.updated_at
    returning workspace_id, webhook_url, secret_enc`;
  return row;
}

export type NewDelivery = Pick<DeliveryRow, 'id' | 'workspace_id' | 'event_id' | 'event_type' | 'test' | 'call_id' | 'body' | 'created_at'> & { next_attempt_at: Date };

/** Inserts a pending delivery; for a call event a second one for the same call is a no-op (undefined). */
export async function insertDelivery(sql: SqlOrTx, d: NewDelivery): Promise<DeliveryRow | undefined> {
  const [row] = await sql<DeliveryRow[]>`
    insert into webhook_deliveries (id, workspace_id, event_id, event_type, test, call_id, status, body, next_attempt_at, created_at, updated_at)
    values (${d.id}, ${d.workspace_id}, ${d.event_id}, ${d.event_type}, ${d.test}, ${d.call_id}, 'pending', ${d.body}, ${d.next_attempt_at}, ${d.created_at}, ${d.created_at})
    on conflict do nothing
    returning *`;
  return row;
}

export async function getDelivery(sql: SqlOrTx, id: string, workspaceId?: string): Promise<DeliveryRow | undefined> {
  const [row] = workspaceId
    ? await sql<DeliveryRow[]>`select * from webhook_deliveries where id = ${id} and workspace_id = ${workspaceId}`
    : await sql<DeliveryRow[]>`select * from webhook_deliveries where id = ${id}`;
  return row;
}

export async function listDeliveries(sql: Sql, workspaceId: string, status: string | undefined, page: { limit: number; offset: number }): Promise<{ rows: DeliveryRow[]; total: number }> {
  const filter = status ? sql`and status = ${status}` : sql``;
  const rows = await sql<DeliveryRow[]>`
    select * from webhook_deliveries where workspace_id = ${workspaceId} ${filter}
    order by created_at desc, id desc limit ${page.limit} offset ${page.offset}`;
  const [{ n }] = await sql<{ n: number }[]>`select count(*)::int as n from webhook_deliveries where workspace_id = ${workspaceId} ${filter}`;
  return { rows, total: n };
}

export function listAttempts(sql: SqlOrTx, deliveryId: string): Promise<AttemptRow[]> {
  return sql<AttemptRow[]>`select * from webhook_attempts where delivery_id = ${deliveryId} order by n`;
}

/**
 * Test pings not yet sent (`TEST_LIMIT` counts them) and the earliest due time among them (an
 * in-flight one keeps the due time of the attempt under way).
 */
export async function unsentTests(sql: SqlOrTx, workspaceId: string): Promise<{ n: number; earliestDue: Date | null }> {
  const [row] = await sql<{ n: number; earliest_due: Date | null }[]>`
    select count(*)::int as n, min(next_attempt_at) as earliest_due
    from webhook_deliveries where workspace_id = ${workspaceId} and test and status in ('pending', 'in_flight')`;
  return { n: row.n, earliestDue: row.earliest_due };
}

/** The endpoint was removed: nothing pending is sent any more (spec: pending -> skipped). */
export function skipPending(sql: SqlOrTx, workspaceId: string, now: Date) {
  return sql`
    update webhook_deliveries set status = 'skipped', next_attempt_at = null, updated_at = ${now}
    where workspace_id = ${workspaceId} and status = 'pending'`;
}
