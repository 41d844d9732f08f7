/**
 * `conversations.summary_requests`: how many times a summary was asked for explicitly
 * (`PUT /conversations/{id}` with `agent_id`). The summary job reads it with `summary_status` and
 * writes `skipped` or `failed` only if it is unchanged: a request made while a job was deciding or
 * failing queued a job of its own, which must find the row `pending` (control-plane/conversations/summary.ts).
 */
export const m0021_summary_requests = {
  version: 21,
  name: 'summary_requests',
  sql: /* sql */ `
alter table conversations add column summary_requests integer not null default 0;
`,
};
