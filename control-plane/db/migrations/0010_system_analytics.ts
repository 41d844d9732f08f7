/**
 * System analytics (issue 17; docs/system-analytics.md).
 *
 * - `system_health`: one row per heartbeat report of a control-plane process (written by itself)
 *   or a media-engine node (copied from its registry heartbeat by the collector job: engines never
 *   touch Postgres). `(service_name, node_id, recorded_at)` is unique, so a report collected twice
 *   (a job re-run after a crash, two collector runs close together) is stored once. History is
 *   pruned by age in the collector job; `recorded_at` leads an index for both the prune and the
 *   "latest per service" read (a recent slice only).
 * - Covering indexes for the latency, usage and tool-call aggregates, which reach the records
 *   through the caller's conversations of a date range (existing `conversations_ws_*` indexes)
 *   and then read each conversation's messages / tool calls: with the columns the aggregates use
 *   included, those reads are index-only instead of one heap visit per message.
 */
export const m0010_system_analytics = {
  version: 10,
  name: 'system_analytics',
  sql: /* sql */ `
create table system_health (
  id bigint generated always as identity primary key,
  service_name text not null check (service_name in ('control-plane', 'media-engine')),
  node_id text not null,
  status text not null,
  cpu_usage double precision not null,
  memory_rss_bytes bigint not null,
  heap_used_bytes bigint not null,
  active_connections integer not null,
  active_calls integer not null,
  request_count bigint not null,
  error_count bigint not null,
  avg_response_ms double precision,
  uptime_seconds double precision not null,
  recorded_at timestamptz not null
);
create unique index system_health_report_key on system_health (service_name, node_id, recorded_at);
create index system_health_recorded_idx on system_health (recorded_at);

create index messages_latency_idx on messages (conversation_id)
  include (role, asr_provider, asr_model, asr_latency_ms, llm_provider, llm_model, llm_latency_ms, tts_provider, tts_latency_ms, total_latency_ms, internal_overhead_ms);
create index tool_calls_metrics_idx on tool_calls (conversation_id) include (tool_name, status, latency_ms);
create index conversations_ws_usage_idx on conversations (workspace_id, started_at)
  include (agent_id, user_id, session_id, call_id, total_duration_ms);
`,
};
