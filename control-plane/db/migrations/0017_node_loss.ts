/**
 * Node loss and crash repair (issue 23, docs/operations.md):
 * - `conversations.engine_node_id`: the engine node that runs the call (written by the engine's
 *   record writer with the start row). The node sweeper finalizes the active conversations of a
 *   node that is gone (`failed`, `metadata.end_reason = 'node_lost'`). Rows from before this
 *   migration have none and are left to the abandoned-call sweeper.
 * - `engine_node_watch`: nodes that still have active conversations but were missing from the
 *   registry, since the first answered listing that missed them (a row goes as soon as a listing
 *   shows the node again). A node is lost once it has been missing for NODE_LOST_AFTER_S: a
 *   failed listing judges nothing, and after a Redis restart nodes write themselves again within
 *   a heartbeat, so a restart never looks like every node dying.
 */
export const m0017_node_loss = {
  version: 17,
  name: 'node_loss',
  sql: /* sql */ `
alter table conversations add column engine_node_id text;
create index conversations_active_node_idx on conversations (engine_node_id) where status = 'active' and engine_node_id is not null;

create table engine_node_watch (
  node_id text primary key,
  missing_since timestamptz not null
);
`,
};
