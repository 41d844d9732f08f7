/**
 * The conversations list's total without visiting every call's stints: calls are counted as the
 * distinct `call_id`s of the workspace, and conversations without one as such, both from this
 * index (an index-only scan once the table is vacuumed). 100,000 conversations: ~14 ms against
 * ~64 ms for the anti-join count (control-plane/conversations/store.ts).
 */
export const m0022_conversations_ws_call = {
  version: 22,
  name: 'conversations_ws_call',
  sql: /* sql */ `
-- A large table takes a while: no statement timeout for the build. An operator who cannot block
-- writes that long builds it first with CREATE INDEX CONCURRENTLY; this is then a no-op.
set local statement_timeout = 0;
create index if not exists conversations_ws_call_idx on conversations (workspace_id, call_id);
`,
};
