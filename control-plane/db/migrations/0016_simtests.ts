/**
 * Simulation tests (issue 20; docs/simulation-tests.md).
 *
 * - `test_cases`: per agent; `mocks` is the mocked tools (`{tool_name: canned JSON}`), an addition.
 * - `test_runs`: one run of some cases against one agent version (0 = the draft at run creation).
 *   `snapshot` freezes the tested configuration (secrets stay encrypted, as in `agent_versions`),
 *   so editing the draft during a run changes nothing. `case_ids` fixes the cases at creation.
 *   `status`: queued -> running -> completed | failed | cancelled. `last_heartbeat` is written by
 *   the worker while it runs; a running run with a stale heartbeat is failed by the watchdog job.
 *   `mode`: `text`, or `audio` (lines also pass through the version's TTS and ASR).
 * - `test_results`: one row per case of a run, created `pending` with the run (so counters and
 *   the stream show every case from the start); the worker fills it in. Unique (run, case): a
 *   re-delivered job updates, never duplicates.
 * - `agents.publish_gate`: `none` | `warn` | `block` (an addition): with `block`, publishing first
 *   runs the draft's `gate`-tagged cases.
 *
 * Version 16 (0014 and 0015 belong to parallel branches).
 */
export const m0016_simtests = {
  version: 16,
  name: 'simtests',
  sql: /* sql */ `
alter table agents add column publish_gate text not null default 'none' check (publish_gate in ('none', 'warn', 'block'));

create table test_cases (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  workspace_id uuid not null,
  name text not null,
  persona text not null default '',
  goal text not null,
  assertions jsonb not null default '[]',
  max_turns integer not null check (max_turns between 1 and 50),
  tags text[] not null default '{}',
  mocks jsonb not null default '{}',
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index test_cases_agent_idx on test_cases (agent_id, created_at, id);

create table test_runs (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  workspace_id uuid not null,
  agent_version integer not null,
  status text not null check (status in ('queued', 'running', 'completed', 'failed', 'cancelled')),
  mode text not null default 'text' check (mode in ('text', 'audio')),
  total integer not null default 0,
  passed integer not null default 0,
  failed integer not null default 0,
  errored integer not null default 0,
  triggered_by text not null,
  snapshot jsonb not null,
  error_message text,
  started_at timestamptz,
  finished_at timestamptz,
  last_heartbeat timestamptz,
  created_at timestamptz not null default now()
);
create index test_runs_agent_idx on test_runs (agent_id, created_at desc, id desc);
create index test_runs_ws_running_idx on test_runs (workspace_id) where status in ('queued', 'running');

create table test_results (
  id uuid primary key,
  test_run_id uuid not null references test_runs(id) on delete cascade,
  test_case_id uuid,
  test_case_name text not null,
  position integer not null,
  case_snapshot jsonb not null,
  status text not null check (status in ('pending', 'running', 'passed', 'failed', 'errored', 'cancelled')),
  transcript jsonb not null default '[]',
  assertion_results jsonb not null default '[]',
  turns_taken integer not null default 0,
  duration_ms integer not null default 0,
  tokens_used integer not null default 0,
  retry_count integer not null default 0,
  error_message text,
  created_at timestamptz not null default now(),
  unique (test_run_id, position)
);
`,
};
