/**
 * `alert_engine_nodes.left_at`: when an engine node closed cleanly. Deleting its row was not
 * enough: an evaluator tick that listed the registry just before the node left could write the row
 * back just after, and `node_down` then counted a clean deploy. A node that left is never revived
 * by the evaluator (node ids are new per process), and rows are pruned once past every window.
 */
export const m0028_engine_nodes_left = {
  version: 28,
  name: 'engine_nodes_left',
  sql: /* sql */ `
set local lock_timeout = '15s';
alter table alert_engine_nodes add column left_at timestamptz;
`,
};
