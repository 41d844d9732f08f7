/**
 * Post-call pipeline (issue 14; docs/adr/0003-job-queue.md).
 *
 * - `post_call_events`: an outbox filled by a trigger on `conversations` the first time a row
 *   reaches `completed` or `failed`, in the same transaction as the status, whoever wrote it (the
 *   engine's record writer, `PUT /conversations/{id}`, a sweeper). The control plane relays it
 *   into jobs (`control-plane/post-call/relay.ts`); `pg_notify` wakes the relays at once.
 * - `conversations.summary_status` / `summary_error`: where the summary job stands
 *   (`pending`, `completed`, `failed` with its error, `skipped`: nothing to summarise or not
 *   asked for). NULL on rows older than this migration or not processed yet.
 * - Webhooks: per-workspace settings (secret encrypted with SecretBox), one delivery per event
 *   (the body is stored once and re-sent byte for byte) and every attempt.
 */
export const m0005_post_call = {
  version: 5,
  name: 'post_call',
  sql: /* sql */ `
alter table conversations
  add column summary_status text check (summary_status in ('pending', 'completed', 'failed', 'skipped')),
  add column summary_error text;

create table post_call_events (
  id bigserial primary key,
  conversation_id uuid not null,
  status text not null,
  created_at timestamptz not null default now()
);

create function post_call_outbox() returns trigger language plpgsql as $$
begin
  -- An end upsert of a row whose start was lost arrives as an INSERT already completed.
  if new.status in ('completed', 'failed') and (tg_op = 'INSERT' or old.status = 'active') then
    insert into post_call_events (conversation_id, status) values (new.id, new.status);
    -- The payload names the schema: test suites share one database, each in its own schema.
    perform pg_notify('post_call_events', current_schema());
  end if;
  return null;
end $$;

create trigger conversations_post_call
  after insert or update of status on conversations
  for each row execute function post_call_outbox();

create table webhook_settings (
  workspace_id uuid primary key references workspaces(id) on delete cascade,
  webhook_url text,
  -- SecretBox (AES-256-GCM); never returned, only shown once in the rotate response
  secret_enc text,
  updated_at timestamptz not null default now()
);

create table webhook_deliveries (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  -- the event id: Webhook-Id and Idempotency-Key, the same on every attempt and manual retry
  event_id uuid not null unique,
  event_type text not null,
  test boolean not null default false,
  -- one call.completed per carrier call: the call's id (NULL for test pings)
  call_id uuid,
  status text not null check (status in ('pending', 'in_flight', 'delivered', 'dead', 'skipped')),
  -- the exact bytes sent (UTF-8 JSON), built once
  body text not null,
  attempts integer not null default 0,
  next_attempt_at timestamptz,
  last_status_code integer,
  last_error text,
  delivered_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index webhook_deliveries_call_key on webhook_deliveries (workspace_id, call_id) where call_id is not null and not test;
create index webhook_deliveries_ws_idx on webhook_deliveries (workspace_id, created_at desc, id desc);
create index webhook_deliveries_ws_status_idx on webhook_deliveries (workspace_id, status, created_at desc, id desc);

create table webhook_attempts (
  id uuid primary key,
  delivery_id uuid not null references webhook_deliveries(id) on delete cascade,
  n integer not null,
  started_at timestamptz not null,
  status_code integer,
  latency_ms integer not null,
  error text,
  response_excerpt text,
  unique (delivery_id, n)
);
`,
};
