/**
 * Alert rules, events and notifications (issue 17, "alerts"; docs/alerts.md).
 *
 * - `alert_rules`: per workspace; `metric`, `component`, `operator` and scope are checked by
 *   control-plane/alerts/rules.ts. At most 100 per workspace (the row-limit trigger of 0004).
 * - `alert_events`: the partial unique index allows ONE active event per rule: two evaluators
 *   that both see the condition can never open two (the second insert conflicts; the evaluator
 *   also locks the rule row, this is the backstop). Deleting a rule deletes its history.
 * - `alert_notifications`: one row per channel target per event and kind (`fired`/`resolved`);
 *   the body is built once, the `alerts.notify` job re-sends those bytes on every attempt.
 * - `alert_engine_nodes`: engine nodes the evaluator has seen alive, so `node_down` can count
 *   nodes that stopped heartbeating (the registry forgets an expired node).
 * - `conversations (workspace_id, ended_at)`: the metrics read the conversations that overlap a
 *   window (`ended_at is null or ended_at >= start`) and the ones that ended in it.
 *
 * Version 11 (0010 belongs to a parallel branch; migrate() applies missing versions in order).
 */
export const m0011_alerts = {
  version: 11,
  name: 'alerts',
  sql: /* sql */ `
create table alert_rules (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  name text not null,
  metric text not null,
  component text not null default '',
  scope_type text not null check (scope_type in ('workspace', 'agent')),
  agent_id uuid,
  operator text not null,
  threshold double precision not null,
  window_minutes integer not null check (window_minutes > 0),
  cooldown_minutes integer not null check (cooldown_minutes >= 0),
  channels jsonb not null default '{"email":[],"webhook":[],"slack":[]}',
  enabled boolean not null default true,
  last_evaluated_at timestamptz,
  last_value double precision,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  check ((scope_type = 'agent') = (agent_id is not null))
);
create index alert_rules_workspace_idx on alert_rules (workspace_id, created_at, id);
create index alert_rules_enabled_idx on alert_rules (id) where enabled;
create trigger alert_rules_limit before insert on alert_rules
  for each row execute function vp_enforce_row_limit('workspace_id', '100', 'alert rules per workspace');

create table alert_events (
  id uuid primary key,
  rule_id uuid not null references alert_rules(id) on delete cascade,
  workspace_id uuid not null,
  rule_name text not null,
  metric text not null,
  component text not null default '',
  scope_type text not null,
  agent_id uuid,
  operator text not null,
  threshold double precision not null,
  observed_value double precision not null,
  status text not null check (status in ('active', 'resolved')),
  triggered_at timestamptz not null,
  resolved_at timestamptz,
  resolution text check (resolution in ('auto', 'manual')),
  resolved_by text
);
create unique index alert_events_one_active on alert_events (rule_id) where status = 'active';
create index alert_events_rule_idx on alert_events (rule_id, triggered_at desc);
create index alert_events_ws_idx on alert_events (workspace_id, triggered_at desc, id desc);
create index alert_events_ws_status_idx on alert_events (workspace_id, status, triggered_at desc, id desc);

create table alert_notifications (
  id uuid primary key,
  event_id uuid not null references alert_events(id) on delete cascade,
  workspace_id uuid not null,
  channel text not null check (channel in ('email', 'webhook', 'slack')),
  target text not null,
  kind text not null check (kind in ('fired', 'resolved')),
  status text not null check (status in ('pending', 'delivered', 'dead')),
  body text not null,
  attempts integer not null default 0,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null,
  updated_at timestamptz not null,
  unique (event_id, kind, channel, target)
);

create table alert_engine_nodes (
  node_id text primary key,
  last_seen_at timestamptz not null
);

create index conversations_ws_ended_idx on conversations (workspace_id, ended_at);
`,
};
