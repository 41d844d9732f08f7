/**
 * OAuth consent in flight (issue 18; docs/connectors.md, "OAuth").
 *
 * `connector_oauth_states`: one row per `POST .../connect/{provider}` until its callback. The
 * signed `state` names the row by `nonce`; the callback deletes it (single use: a replayed state
 * finds nothing). The PKCE verifier is sealed (SecretBox) like every secret. Rows expire with the
 * state (10 minutes); expired rows are swept on every start, and each workspace keeps at most
 * the newest 20 (a user clicking "connect" again and again cannot grow the table).
 */
export const m0014_connector_oauth = {
  version: 14,
  name: 'connector_oauth',
  sql: /* sql */ `
create table connector_oauth_states (
  nonce text primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  user_id text not null,
  provider_id text not null,
  products text[] not null,
  verifier_enc text,
  expires_at timestamptz not null,
  created_at timestamptz not null default now()
);
create index connector_oauth_states_workspace_idx on connector_oauth_states (workspace_id, created_at desc);
create index connector_oauth_states_expiry_idx on connector_oauth_states (expires_at);
`,
};
