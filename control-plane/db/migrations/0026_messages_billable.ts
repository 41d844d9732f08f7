/**
 * `messages.billable` and `tool_calls.billable`: whether usage metering counts a row's tokens,
 * characters or tool call (control-plane/billing/store.ts). The engine's record writer marks what
 * its pipeline made for the caller `true` and platform notices (the credit-exhausted goodbye, the
 * drain notice) `false`: a workspace was billed for being told its credit ran out. Every other
 * writer (REST `POST /conversations/messages` and `/tool-calls`, the human stint's transcription)
 * writes `false` itself: our LLM and TTS never made those rows, yet a client adding assistant
 * messages or tool calls to an engine-run call had them billed.
 *
 * The default stays `true` (Postgres stores the constant without rewriting the tables), so an
 * engine still on the previous release during a rolling upgrade, which does not write the column,
 * is metered as before.
 */
export const m0026_messages_billable = {
  version: 26,
  name: 'messages_billable',
  sql: /* sql */ `
-- Each ALTER needs a moment's exclusive lock: behind a long query on the table it would queue
-- every message write after it. Give up instead (the start fails and says so; start again).
set local lock_timeout = '15s';
alter table messages add column billable boolean not null default true;
alter table tool_calls add column billable boolean not null default true;
`,
};
