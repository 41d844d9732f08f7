/**
 * Spec doc 2, Conversation state machine: `PUT /conversations/{id}` with status `completed` and
 * no `agent_id` ends the record with "no post-call processing" (no summary, QA score or
 * analysis). The outbox trigger fired for every end whoever wrote it; the PUT now marks its own
 * transaction (`voiceplane.skip_post_call`, transaction-local) and the trigger leaves such an end
 * out. Every other end (the engine, a carrier, a sweeper, a PUT with `agent_id`) is unchanged.
 */
export const m0031_put_without_agent_no_post_call = {
  version: 31,
  name: 'put_without_agent_no_post_call',
  sql: /* sql */ `
create or replace function post_call_outbox() returns trigger language plpgsql as $$
begin
  -- An end upsert of a row whose start was lost arrives as an INSERT already completed.
  if new.status in ('completed', 'failed') and (tg_op = 'INSERT' or old.status = 'active')
     and coalesce(current_setting('voiceplane.skip_post_call', true), '') <> 'on' then
    insert into post_call_events (conversation_id, status) values (new.id, new.status);
    -- The payload names the schema: test suites share one database, each in its own schema.
    perform pg_notify('post_call_events', current_schema());
  end if;
  return null;
end $$;
`,
};
