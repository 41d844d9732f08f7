/**
 * Pipeline analytics (issue 16, "Pipeline analytics"; docs/analytics.md): one row per provider
 * step of a recorded turn (ASR, LLM, TTS, each tool call), written by the engine's record writer
 * in the same batch as the turn's messages.
 *
 * - `conversation_id` cascades: a purged conversation takes its events with it.
 * - `agent_id` / `workspace_id` are copied from the conversation (no foreign key to agents, like
 *   `conversations`: records outlive a deleted agent).
 * - The read path is "one agent, a date range, grouped by type/status/provider/model": the
 *   covering index `(agent_id, created_at) include (...)` answers it with an index-only range
 *   scan (plan checked on 1,000,000 rows, docs/analytics.md). `conversation_id` has its own index
 *   so the cascade does not scan the table.
 *
 * Version 9: 0008 belongs to a parallel branch; migrate() applies every missing version in list
 * order, so the gap is harmless and 0008 slots in before this one when merged.
 */
export const m0009_pipeline_events = {
  version: 9,
  name: 'pipeline_events',
  sql: /* sql */ `
create table pipeline_events (
  id uuid primary key,
  conversation_id uuid not null references conversations(id) on delete cascade,
  agent_id uuid not null,
  workspace_id uuid not null,
  turn_number integer not null,
  event_type text not null check (event_type in ('asr', 'llm', 'tts', 'tool')),
  status text not null check (status in ('success', 'error', 'interrupted')),
  provider text not null,
  model_id text not null default '',
  latency_ms integer not null check (latency_ms >= 0),
  error_message text,
  created_at timestamptz not null
);
create index pipeline_events_agent_time_idx on pipeline_events (agent_id, created_at)
  include (event_type, status, provider, model_id, latency_ms);
create index pipeline_events_conversation_idx on pipeline_events (conversation_id);
`,
};
