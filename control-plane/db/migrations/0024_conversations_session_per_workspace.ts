/**
 * A conversation's `session_id` is unique per workspace, no longer across all tenants (0003's
 * `conversations_session_key`). With the global index, a workspace could claim a session id first
 * and the owner's own create then answered 409 for a row it cannot see, which also confirmed that
 * the id existed elsewhere. Every lookup by session id is scoped by workspace
 * (control-plane/conversations: by-session, the create's conflict answer, the carrier annotator).
 *
 * Column order (session_id, workspace_id): the same uniqueness as (workspace_id, session_id), and
 * lookups by session id alone (a campaign contact's conversation, the annotator) keep an index.
 * The new index is built before the old one is dropped, inside the migration's transaction, so
 * session ids are unique per workspace at every moment (existing rows satisfy it: they were
 * unique globally).
 */
export const m0024_conversations_session_per_workspace = {
  version: 24,
  name: 'conversations_session_per_workspace',
  sql: /* sql */ `
-- A large table takes a while to index: no statement timeout for the build (as in 0022).
set local statement_timeout = 0;
create unique index conversations_session_ws_key on conversations (session_id, workspace_id);
drop index conversations_session_key;
`,
};
