/**
 * QA rubrics and scores (issue 16, "QA"; docs/qa.md).
 *
 * - `qa_rubrics`: per workspace; `criteria` is `[{name, weight, description?}]` checked by
 *   control-plane/qa/criteria.ts.
 * - `qa_rubric_bindings`: the agent's ACTIVE rubric; the primary key on `agent_id` is what makes
 *   it one per agent (binding another rubric replaces the row). Deleting the rubric or the agent
 *   removes the binding.
 * - `qa_scores`: one row per conversation, unique: the post-call relay inserts it `pending` in its
 *   transaction and the job upserts the outcome, so a retried job never creates a second score.
 *   Rubric name, threshold and the criteria (with weights) are copied in when scored: a later edit
 *   or deletion of the rubric does not rewrite history (`rubric_id` becomes NULL on deletion).
 *
 * Version 8 (0009 belongs to a parallel branch).
 */
export const m0008_qa = {
  version: 8,
  name: 'qa',
  sql: /* sql */ `
create table qa_rubrics (
  id uuid primary key,
  workspace_id uuid not null references workspaces(id) on delete cascade,
  name text not null,
  description text not null default '',
  criteria jsonb not null,
  pass_threshold double precision not null check (pass_threshold >= 0 and pass_threshold <= 100),
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create index qa_rubrics_workspace_idx on qa_rubrics (workspace_id, created_at, id);

create table qa_rubric_bindings (
  agent_id uuid primary key references agents(id) on delete cascade,
  rubric_id uuid not null references qa_rubrics(id) on delete cascade,
  workspace_id uuid not null,
  bound_at timestamptz not null default now()
);
create index qa_rubric_bindings_rubric_idx on qa_rubric_bindings (rubric_id);

create table qa_scores (
  id uuid primary key,
  conversation_id uuid not null references conversations(id) on delete cascade,
  workspace_id uuid not null,
  agent_id uuid not null,
  rubric_id uuid references qa_rubrics(id) on delete set null,
  rubric_name text not null default '',
  pass_threshold double precision not null default 0,
  status text not null check (status in ('pending', 'scored', 'failed', 'reviewed')),
  -- [{name, weight, score, justification, quote}]: the model's scores, never changed by a review
  criteria jsonb not null default '[]',
  overall_score double precision,
  flagged boolean not null default false,
  compliance_issue boolean not null default false,
  compliance_note text,
  model text not null default '',
  latency_ms integer not null default 0,
  attempts integer not null default 0,
  error text,
  reviewer_id text,
  review_notes text,
  reviewed_at timestamptz,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now()
);
create unique index qa_scores_conversation_key on qa_scores (conversation_id);
-- cohort reads (workspace, optionally agent), newest first
create index qa_scores_workspace_idx on qa_scores (workspace_id, created_at desc, id desc);
create index qa_scores_agent_idx on qa_scores (agent_id, created_at desc, id desc);
`,
};
