/**
 * Connector connections (issue 18; docs/connectors.md).
 *
 * - `connector_connections`: ONE row per (workspace, provider): reconnecting replaces the
 *   credential in place, so the id agents' tools are bound to never changes (spec behaviour 2).
 *   Disconnect keeps the row (`is_active` false) and nulls `secret_enc`: the secret is purged,
 *   while a later reconnect re-activates the same id and the tools bound to it.
 * - `secret_enc`: the credential object as JSON, sealed by SecretBox (AES-256-GCM); never read
 *   by a listing query.
 * - `agent_tools.disabled_by_connection`: marks the tools a disconnect switched off, so a
 *   reconnect re-enables exactly those and never one its owner disabled by hand.
 */
export const m0013_connectors = {
  version: 13,
  name: 'connectors',
  sql: /* sql */ `
create table connector_connections (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  provider_id text not null,
  account_label text not null default '',
  auth_mode text not null check (auth_mode in ('api_key', 'oauth')),
  is_active boolean not null default true,
  health_status text not null default 'ok' check (health_status in ('ok', 'reconnect_needed', 'error')),
  health_detail text,
  health_checked_at timestamptz,
  token_expires_at timestamptz,
  granted_scopes text[] not null default '{}',
  enabled_products text[] not null default '{}',
  secret_enc text,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  unique (workspace_id, provider_id),
  check (is_active = (secret_enc is not null))
);
alter table agent_tools add column disabled_by_connection boolean not null default false;
create index agent_tools_connection_idx on agent_tools ((connector_binding->>'connection_id')) where connector_binding is not null;
`,
};
