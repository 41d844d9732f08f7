/**
 * Durable conversation records (issue 5): one `conversations` row per session (stint), its
 * `messages` (a caller message and the agent reply share `turn_number`) and `tool_calls`.
 * Ids are chosen by the writer (UUID v7), so a retried batch is a no-op (`on conflict (id) do
 * nothing`). `agent_id` carries no foreign key: records outlive a deleted agent ("other
 * conversation data: no expiry"); the workspace is recorded on the row at write time.
 * `audio_path` is relative to `DATA_DIR/audio/` (never a URL); reads sign a fresh link.
 */
export const m0003_conversations = {
  version: 3,
  name: 'conversations',
  sql: /* sql */ `
create table conversations (
  id uuid primary key,
  session_id text not null,
  user_id text,
  agent_id uuid not null,
  workspace_id uuid not null,
  -- stints of one transferred call share it (the list folds them)
  call_id uuid,
  segment_kind text not null default 'ai' check (segment_kind in ('ai', 'human')),
  status text not null default 'active' check (status in ('active', 'completed', 'failed')),
  total_turns integer not null default 0,
  total_duration_ms bigint not null default 0,
  avg_response_latency_ms integer not null default 0,
  summary text,
  metadata jsonb not null default '{}',
  started_at timestamptz not null default now(),
  ended_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index conversations_session_key on conversations (session_id);
-- list: newest first per workspace, optionally per agent or user; summary: per status
create index conversations_ws_started_idx on conversations (workspace_id, started_at desc, id desc);
create index conversations_ws_agent_idx on conversations (workspace_id, agent_id, started_at desc, id desc);
create index conversations_ws_user_idx on conversations (workspace_id, user_id, started_at desc, id desc);
create index conversations_ws_status_idx on conversations (workspace_id, status);
create index conversations_agent_idx on conversations (agent_id);
-- folding of transferred calls: siblings by call, in call order
create index conversations_call_idx on conversations (call_id, started_at, id) where call_id is not null;

create table messages (
  id uuid primary key,
  conversation_id uuid not null references conversations(id) on delete cascade,
  turn_number integer not null,
  role text not null check (role in ('user', 'assistant')),
  content text not null default '',
  tool_calls jsonb not null default '[]',
  tool_call_id text,
  reasoning_content text,
  audio_path text,
  asr_provider text,
  asr_model text,
  asr_latency_ms integer,
  asr_confidence double precision,
  llm_provider text,
  llm_model text,
  llm_latency_ms integer,
  tokens_input integer,
  tokens_output integer,
  tts_provider text,
  tts_latency_ms integer,
  total_latency_ms integer,
  internal_overhead_ms integer,
  metadata jsonb not null default '{}',
  created_at timestamptz not null default now()
);
create index messages_conversation_idx on messages (conversation_id, turn_number, created_at, id);
-- retention sweeper: oldest messages that still hold audio
create index messages_audio_idx on messages (created_at) where audio_path is not null;

create table tool_calls (
  id uuid primary key,
  message_id uuid not null references messages(id) on delete cascade,
  conversation_id uuid not null references conversations(id) on delete cascade,
  tool_name text not null,
  tool_input jsonb not null default '{}',
  tool_output jsonb,
  status text not null default 'success',
  latency_ms integer not null default 0,
  error_message text,
  created_at timestamptz not null default now()
);
create index tool_calls_conversation_idx on tool_calls (conversation_id, created_at, id);
create index tool_calls_message_idx on tool_calls (message_id);
`,
};
