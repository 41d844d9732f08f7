/**
 * The count limits added after migration 0004, now enforced by its trigger function as well
 * (`vp_enforce_row_limit`: an advisory lock per parent, then the count, then the insert). The
 * services counted and then inserted, so parallel creates all saw room: 110 parallel rubric
 * creates stored 102-106 with a limit of 100, 25 schema creates 22-25 with a limit of 20. The
 * services keep their own check for the common case's message; this makes the limit hold.
 */
export const m0023_more_row_limits = {
  version: 23,
  name: 'more_row_limits',
  sql: /* sql */ `
-- QA rubrics per workspace (control-plane/qa/service.ts MAX_RUBRICS_PER_WORKSPACE)
create trigger qa_rubrics_limit before insert on qa_rubrics
  for each row execute function vp_enforce_row_limit('workspace_id', '100', 'QA rubrics per workspace');

-- analysis schemas per agent (control-plane/analysis/service.ts MAX_SCHEMAS_PER_AGENT)
create trigger analysis_schemas_limit before insert on analysis_schemas
  for each row execute function vp_enforce_row_limit('agent_id', '20', 'analysis schemas per agent');

-- simulation test cases per agent (control-plane/simtests/validate.ts MAX_CASES_PER_AGENT)
create trigger test_cases_limit before insert on test_cases
  for each row execute function vp_enforce_row_limit('agent_id', '200', 'test cases per agent');
`,
};
