/**
 * Why a campaign stands where it is when the service moved it, not its owner: a dial that our own
 * checks refused for the agent (it cannot dial out any more, no caller ID) pauses the campaign, and
 * the reason was only on the requeued contact's `error_message` and in the log. Null whenever the
 * owner moved the campaign last (create, start, pause, cancel) and when it completes.
 */
export const m0030_campaigns_status_reason = {
  version: 30,
  name: 'campaigns_status_reason',
  sql: /* sql */ `
set local lock_timeout = '15s';
alter table campaigns add column status_reason text;
`,
};
