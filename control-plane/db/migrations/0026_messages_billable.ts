/**
 * `messages.billable`: whether usage metering counts the message's tokens and characters
 * (control-plane/billing/store.ts). The engine's record writer sets it: true on what its pipeline
 * made for the caller, false on platform notices (the credit-exhausted goodbye, the drain notice),
 * which billed a workspace for being told its credit ran out. Every other writer (REST
 * `POST /conversations/messages`, the human stint's transcription) takes the default, false:
 * our LLM and TTS never made those, yet a client adding assistant messages to an engine-run
 * call had its characters and token counts billed.
 *
 * Existing rows become true (Postgres stores the constant without rewriting the table), so a
 * call running across the upgrade is metered as before; the default then turns false.
 */
export const m0026_messages_billable = {
  version: 26,
  name: 'messages_billable',
  sql: /* sql */ `
alter table messages add column billable boolean not null default true;
alter table messages alter column billable set default false;
`,
};
