/**
 * Human agents (issue 21; docs/portal.md).
 *
 * - `human_agents`: the call-center roster, one row per person, `agent_code` unique per workspace
 *   (case-insensitive). Live presence (`status`, `status_changed_at`, `last_heartbeat_at`,
 *   `presence_session_id`) lives on the row: every replica reads and writes the same state, and
 *   the sweep job (`portal.presence-sweep`) marks a socket without heartbeat offline.
 * - `human_agent_tokens`: portal login tokens (sha-256 of the token, never the token).
 * - `human_agent_reset_tokens`: single-use reset tokens, 1 h, sha-256 stored.
 * - `human_agent_password_audit`: who did what to a password, from which address.
 * - `human_agent_sessions`: one row per presence socket login (ended_at null while open).
 * - `human_agent_status_spans`: time in each presence status, per session (attendance sums them).
 * - `human_agent_presence_events`: the raw timeline.
 * - `human_agent_alerts`: late login, missed shift, long break; `dedupe_key` makes each fire once.
 * - `human_agent_shifts`: weekly shifts, soft-deleted (`deleted_at`), unique on agent+day+start.
 * - `human_handoffs`: a call offered to a person (control-plane/portal/handoff.ts): `offered` ->
 *   `accepted` -> `ended`, or `declined` / `expired` (the next free agent gets a new row), or
 *   `no_agent` when nobody was free. `conversation_id` is the human segment's conversation.
 */
export const m0018_portal = {
  version: 18,
  name: 'portal',
  sql: /* sql */ `
create table human_agents (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  display_name text not null,
  agent_code text not null,
  email text,
  max_concurrent_calls integer not null default 1 check (max_concurrent_calls between 1 and 20),
  skills text[] not null default '{}',
  is_active boolean not null default true,
  password_hash text,
  password_set_at timestamptz,
  status text not null default 'offline' check (status in ('available', 'busy', 'on_call', 'wrap_up', 'break', 'offline')),
  status_changed_at timestamptz not null default now(),
  last_heartbeat_at timestamptz,
  presence_session_id uuid,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index human_agents_code_key on human_agents (workspace_id, lower(agent_code));
create index human_agents_presence_idx on human_agents (status, last_heartbeat_at) where status <> 'offline';

create table human_agent_tokens (
  token_hash text primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  expires_at timestamptz not null,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index human_agent_tokens_agent_idx on human_agent_tokens (agent_id);

create table human_agent_reset_tokens (
  token_hash text primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  expires_at timestamptz not null,
  used_at timestamptz,
  revoked_at timestamptz,
  created_at timestamptz not null default now()
);
create index human_agent_reset_tokens_agent_idx on human_agent_reset_tokens (agent_id);

create table human_agent_password_audit (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  action text not null,
  performed_by text not null,
  performed_by_id text not null default '',
  ip_address text not null default '',
  details jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index human_agent_password_audit_idx on human_agent_password_audit (agent_id, created_at desc);

create table human_agent_sessions (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  workspace_id uuid not null,
  started_at timestamptz not null,
  ended_at timestamptz,
  end_reason text,
  ip_address text not null default ''
);
create index human_agent_sessions_agent_idx on human_agent_sessions (agent_id, started_at);
create index human_agent_sessions_open_idx on human_agent_sessions (workspace_id) where ended_at is null;

create table human_agent_status_spans (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  session_id uuid not null references human_agent_sessions(id) on delete cascade,
  status text not null,
  started_at timestamptz not null,
  ended_at timestamptz
);
create index human_agent_status_spans_agent_idx on human_agent_status_spans (agent_id, started_at);

create table human_agent_presence_events (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  workspace_id uuid not null,
  event_type text not null,
  status text not null default '',
  source text not null,
  session_id uuid,
  ip_address text not null default '',
  details jsonb not null default '{}',
  created_at timestamptz not null
);
create index human_agent_presence_events_idx on human_agent_presence_events (agent_id, created_at);

create table human_agent_alerts (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  workspace_id uuid not null,
  alert_type text not null,
  severity text not null,
  message text not null,
  details jsonb not null default '{}',
  acknowledged boolean not null default false,
  dedupe_key text not null unique,
  created_at timestamptz not null
);
create index human_agent_alerts_ws_idx on human_agent_alerts (workspace_id, created_at desc);

create table human_agent_shifts (
  id uuid primary key,
  agent_id uuid not null references human_agents(id) on delete cascade,
  day_of_week integer not null check (day_of_week between 0 and 6),
  shift_start text not null,
  shift_end text not null,
  timezone text not null default 'UTC',
  deleted_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index human_agent_shifts_key on human_agent_shifts (agent_id, day_of_week, shift_start);

create table human_handoffs (
  id uuid primary key,
  workspace_id uuid not null,
  call_id uuid not null,
  session_id text not null default '',
  ai_agent_id uuid not null,
  human_agent_id uuid references human_agents(id) on delete set null,
  status text not null check (status in ('offered', 'accepted', 'declined', 'expired', 'ended', 'no_agent')),
  conversation_id uuid,
  offered_at timestamptz not null,
  expires_at timestamptz,
  answered_at timestamptz,
  ended_at timestamptz
);
create index human_handoffs_call_idx on human_handoffs (call_id, offered_at);
create index human_handoffs_open_idx on human_handoffs (human_agent_id, status) where status in ('offered', 'accepted');
-- one open offer or connected person per call at a time
create unique index human_handoffs_call_open_key on human_handoffs (call_id) where status in ('offered', 'accepted');
`,
};
