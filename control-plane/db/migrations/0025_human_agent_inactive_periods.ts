/**
 * When each human agent was inactive (deactivated until reactivated, or for good: `ended_at`
 * null). Shift windows that overlap an inactive period are not judged (attendance adherence,
 * `late_login`, `missed_shift`: portal/attendance.ts `judgedWindows`): nobody can attend a shift
 * while their account is switched off. Without this, a deactivated agent's attendance read showed
 * every later shift as missed at 0 % adherence.
 *
 * At most one open period per agent (the partial unique index), so two concurrent deactivations
 * record one. Agents already inactive get a period from their last update, the best instant known.
 */
export const m0025_human_agent_inactive_periods = {
  version: 25,
  name: 'human_agent_inactive_periods',
  sql: /* sql */ `
create table human_agent_inactive_periods (
  agent_id uuid not null references human_agents(id) on delete cascade,
  started_at timestamptz not null,
  ended_at timestamptz,
  check (ended_at is null or ended_at >= started_at)
);
create index human_agent_inactive_periods_agent_idx on human_agent_inactive_periods (agent_id, started_at);
create unique index human_agent_inactive_periods_open_key on human_agent_inactive_periods (agent_id) where ended_at is null;
insert into human_agent_inactive_periods (agent_id, started_at) select id, updated_at from human_agents where not is_active;
`,
};
