/**
 * Post-call analysis (issue 16; docs/analysis.md).
 *
 * - `analysis_schemas`: per agent, the fields to extract from every completed call. The
 *   workspace is copied from the agent when the schema is made, so every read is fenced by one
 *   column. Deleting an agent (or the schema) deletes its schemas (and their results).
 * - `analysis_results`: one row per (conversation, schema), unique: a retried job can never add a
 *   second result. `values` is the validated object (`{}` when failed).
 *
 * Version 7: 0006 is the campaigns migration from another branch.
 */
export const m0007_analysis = {
  version: 7,
  name: 'analysis',
  sql: /* sql */ `
create table analysis_schemas (
  id uuid primary key,
  agent_id uuid not null references agents(id) on delete cascade,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  name text not null,
  description text not null default '',
  -- [{name, type, description?, enum?}], checked by control-plane/analysis/fields.ts
  fields jsonb not null,
  is_active boolean not null default true,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index analysis_schemas_agent_idx on analysis_schemas (agent_id, created_at, id);

create table analysis_results (
  id uuid primary key,
  conversation_id uuid not null references conversations(id) on delete cascade,
  schema_id uuid not null references analysis_schemas(id) on delete cascade,
  agent_id uuid not null,
  workspace_id uuid not null,
  status text not null check (status in ('complete', 'failed')),
  "values" jsonb not null default '{}',
  model text not null default '',
  latency_ms integer not null default 0,
  attempts integer not null default 0,
  error text,
  created_at timestamptz not null default now()
);
create unique index analysis_results_conv_schema_key on analysis_results (conversation_id, schema_id);
-- results by agent (list, newest first) and per schema (insights)
create index analysis_results_agent_idx on analysis_results (agent_id, created_at desc, id desc);
create index analysis_results_schema_idx on analysis_results (schema_id, status);
`,
};
