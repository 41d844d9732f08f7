/**
 * Outbound campaigns (issue 15; spec doc 2 "Campaign", "Campaign contact row"; docs/campaigns.md).
 *
 * - `campaigns`: create fields except `name` / `agent_id` live in `config` (read back as
 *   `data.config`). `next_dial_at` is the pacing state (a token bucket of depth one, kept as the
 *   earliest time the next call may start), advanced in the same transaction that claims a contact,
 *   so every replica paces against the same value.
 * - `campaign_contacts`: one row per CSV line that normalised to E.164. `status` moves
 *   queued -> dialing (claimed, `claimed_at`) -> in_progress (carrier accepted) -> completed |
 *   voicemail | failed, or back to queued with a later `scheduled_at` (retry). `call_id` is chosen
 *   at claim time, before the carrier is asked, so a callback that beats the dial's return finds
 *   its contact. `seq` keeps CSV order for the calls list and the export.
 * Counters (`completed_calls`, ...) are counted from the contacts when read, never stored twice.
 */
export const m0006_campaigns = {
  version: 6,
  name: 'campaigns',
  sql: /* sql */ `
create table campaigns (
  id uuid primary key,
  user_id uuid not null references users(id) on delete cascade,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  agent_id uuid not null references agents(id) on delete cascade,
  name text not null,
  status text not null default 'draft'
    check (status in ('draft', 'scheduled', 'running', 'paused', 'completed', 'cancelled')),
  config jsonb not null,
  column_map jsonb not null default '{}',
  -- dynamic variable names of every upload, in first-seen order: the export's columns
  variable_names jsonb not null default '[]',
  next_dial_at timestamptz not null default 'epoch',
  -- the replica running the campaign's dial loop, until when (a dead owner's lease runs out)
  dialer_owner text,
  dialer_lease_until timestamptz,
  created_at timestamptz not null,
  started_at timestamptz,
  completed_at timestamptz,
  updated_at timestamptz not null
);
create index campaigns_user_idx on campaigns (user_id, created_at desc, id desc);
create index campaigns_ws_idx on campaigns (workspace_id, created_at desc, id desc);

create table campaign_contacts (
  id uuid primary key,
  campaign_id uuid not null references campaigns(id) on delete cascade,
  seq bigserial,
  to_number text not null,
  dynamic_variables jsonb not null default '{}',
  status text not null default 'queued'
    check (status in ('queued', 'dialing', 'in_progress', 'completed', 'voicemail', 'failed', 'cancelled')),
  call_id uuid,
  session_id text,
  conversation_id uuid,
  attempts integer not null default 0,
  scheduled_at timestamptz,
  claimed_at timestamptz,
  dialed_at timestamptz,
  answered_at timestamptz,
  completed_at timestamptz,
  duration_seconds integer,
  error_message text,
  amd_verdict text
);
create index campaign_contacts_list_idx on campaign_contacts (campaign_id, seq);
-- The dialer's claim: the next due queued contact of a campaign.
create index campaign_contacts_due_idx on campaign_contacts (campaign_id, scheduled_at, seq) where status = 'queued';
create unique index campaign_contacts_call_idx on campaign_contacts (call_id) where call_id is not null;
`,
};
