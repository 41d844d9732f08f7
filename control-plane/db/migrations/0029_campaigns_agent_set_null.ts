/**
 * Deleting an agent deleted its campaigns and every contact's result with them (`on delete
 * cascade`), a running campaign included. The agents domain now refuses to delete an agent while
 * one of its campaigns is not finished (409; agents/core/store.ts `deleteAgentRow`), and a
 * finished campaign outlives its agent: `agent_id` becomes null, its history (counters, calls
 * list, export) stays. Only final campaigns (completed, cancelled) can hold a null agent, and
 * they are never dialed again.
 */
export const m0029_campaigns_agent_set_null = {
  version: 29,
  name: 'campaigns_agent_set_null',
  sql: /* sql */ `
set local lock_timeout = '15s';
alter table campaigns alter column agent_id drop not null;
alter table campaigns drop constraint campaigns_agent_id_fkey;
alter table campaigns add constraint campaigns_agent_id_fkey foreign key (agent_id) references agents(id) on delete set null;
`,
};
