/** SQL of the alerts domain: rules, events, notifications. */
import type postgres from 'postgres';
import type { Sql } from '../../shared/db/client.js';
import type { Channels } from './rules.js';
export { agentWorkspace } from '../db/owners.js';

type Tx = Sql | postgres.TransactionSql<Record<string, unknown>>;

export interface RuleRow {
  id: string;
  workspace_id: string;
  name: string;
  metric: string;
  component: string;
  scope_type: 'workspace' | 'agent';
  agent_id: string | null;
  operator: string;
  threshold: number;
  window_minutes: number;
  cooldown_minutes: number;
  channels: Channels;
  enabled: boolean;
  last_evaluated_at: Date | null;
  last_value: number | null;
  created_at: Date;
  updated_at: Date;
}

export type RuleFields = Pick<RuleRow, 'name' | 'metric' | 'component' | 'scope_type' | 'agent_id' | 'operator' | 'threshold' | 'window_minutes' | 'cooldown_minutes' | 'channels' | 'enabled'>;

export interface EventRow {
  id: string;
  rule_id: string;
  workspace_id: string;
  rule_name: string;
  metric: string;
  component: string;
  scope_type: 'workspace' | 'agent';
  agent_id: string | null;
  operator: string;
  threshold: number;
  observed_value: number;
  status: 'active' | 'resolved';
  triggered_at: Date;
  resolved_at: Date | null;
  resolution: 'auto' | 'manual' | null;
  resolved_by: string | null;
}

export interface NotificationRow {
  id: string;
  event_id: string;
  workspace_id: string;
  channel: 'email' | 'webhook' | 'slack';
  target: string;
  kind: 'fired' | 'resolved';
  status: 'pending' | 'delivered' | 'dead';
  body: string;
  attempts: number;
  last_error: string | null;
  delivered_at: Date | null;
  created_at: Date;
}

export async function insertRule(sql: Sql, id: string, workspaceId: string, f: RuleFields, now: Date): Promise<RuleRow> {
  const [row] = await sql<RuleRow[]>`
    insert into alert_rules (id, workspace_id, name, metric, component, scope_type, agent_id, operator, threshold, window_minutes, cooldown_minutes, channels, enabled, created_at, updated_at)
    values (${id}, ${workspaceId}, ${f.name}, ${f.metric}, ${f.component}, ${f.scope_type}, ${f.agent_id}, ${f.operator}, ${f.threshold},
      ${f.window_minutes}, ${f.cooldown_minutes}, ${sql.json(f.channels as never)}, ${f.enabled}, ${now}, ${now})
    returning *`;
  return row;
}

export async function updateRule(sql: Sql, id: string, f: RuleFields, now: Date): Promise<RuleRow | undefined> {
  const [row] = await sql<RuleRow[]>`
    update alert_rules set name = ${f.name}, metric = ${f.metric}, component = ${f.component}, scope_type = ${f.scope_type},
      agent_id = ${f.agent_id}, operator = ${f.operator}, threshold = ${f.threshold}, window_minutes = ${f.window_minutes},
      cooldown_minutes = ${f.cooldown_minutes}, channels = ${sql.json(f.channels as never)}, enabled = ${f.enabled}, updated_at = ${now}
    where id = ${id} returning *`;
  return row;
}

export async function getRule(sql: Tx, id: string): Promise<RuleRow | undefined> {
  const [row] = await sql<RuleRow[]>`select * from alert_rules where id = ${id}`;
  return row;
}

export async function listRules(sql: Sql, workspaceId: string): Promise<RuleRow[]> {
  return sql<RuleRow[]>`select * from alert_rules where workspace_id = ${workspaceId} order by created_at, id`;
}

export async function deleteRule(sql: Sql, id: string): Promise<boolean> {
  return (await sql`delete from alert_rules where id = ${id}`).count > 0;
}

/** Enabled rules, the longest unevaluated first (a tick that runs out of time leaves the freshest). */
export async function enabledRuleIds(sql: Sql): Promise<string[]> {
  return (await sql<{ id: string }[]>`select id from alert_rules where enabled order by last_evaluated_at nulls first, id`).map((r) => r.id);
}

export async function listEvents(sql: Sql, workspaceId: string, status: string | undefined, limit: number): Promise<EventRow[]> {
  const filter = status ? sql`and status = ${status}` : sql``;
  return sql<EventRow[]>`
    select * from alert_events where workspace_id = ${workspaceId} ${filter}
    order by triggered_at desc, id desc limit ${limit}`;
}

export async function notificationsOf(sql: Sql, eventIds: string[]): Promise<NotificationRow[]> {
  if (!eventIds.length) return [];
  return sql<NotificationRow[]>`
    select * from alert_notifications where event_id in ${sql(eventIds)} order by created_at, channel, target`;
}

export async function getEvent(sql: Tx, id: string): Promise<EventRow | undefined> {
  const [row] = await sql<EventRow[]>`select * from alert_events where id = ${id}`;
  return row;
}

export async function activeCount(sql: Sql, workspaceId: string): Promise<number> {
  const [r] = await sql<{ n: number }[]>`select count(*)::int as n from alert_events where workspace_id = ${workspaceId} and status = 'active'`;
  return r.n;
}

export async function getNotification(sql: Sql, id: string): Promise<NotificationRow | undefined> {
  const [row] = await sql<NotificationRow[]>`select * from alert_notifications where id = ${id}`;
  return row;
}

/** The webhook secret of the workspace (encrypted), shared with the call.completed deliveries. */
export async function webhookSecretEnc(sql: Sql, workspaceId: string): Promise<string | undefined> {
  const [row] = await sql<{ secret_enc: string | null }[]>`select secret_enc from webhook_settings where workspace_id = ${workspaceId}`;
  return row?.secret_enc ?? undefined;
}

