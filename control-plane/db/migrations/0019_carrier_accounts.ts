/**
 * Workspace carrier accounts (issue 24, docs/telephony.md "Carrier accounts"): one row per
 * workspace and carrier, set in the call-center settings. `fields` holds the non-secret fields
 * (account sid, SignalWire space URL, Telnyx public key, ...), `secrets_enc` the secret ones as one
 * encrypted JSON object (shared/secrets). An agent binding's blank credentials inherit these.
 */
export const m0019_carrier_accounts = {
  version: 19,
  name: 'carrier_accounts',
  sql: /* sql */ `
create table workspace_carrier_accounts (
  workspace_id uuid not null references workspaces (id) on delete cascade,
  carrier text not null,
  fields jsonb not null default '{}'::jsonb,
  secrets_enc text,
  updated_at timestamptz not null,
  primary key (workspace_id, carrier)
);
`,
};
