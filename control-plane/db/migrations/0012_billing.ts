/**
 * Usage metering and credits (issue 17; docs/billing.md).
 *
 * - `billing_ledger`: the truth. Every change of a balance is one immutable row: `top_up`
 *   (operator, positive), `usage_debit` (one per metered conversation, negative or zero, with the
 *   metered quantities and the prices used), `adjustment` (operator, either sign). A balance is
 *   the sum of its workspace's rows.
 * - Idempotency by unique keys, not by reads: one debit per conversation (`conversation_id`), one
 *   operator entry per (workspace, `reference`) (the Idempotency-Key or client reference).
 * - `billing_balances`: the sum cached per workspace, changed only in the transaction that inserts
 *   the ledger row (its row lock also orders concurrent entries of one workspace).
 * - No foreign key to workspaces (like `conversations`): a debit must never fail, and so hold back
 *   the post-call outbox batch it runs in, because of a workspace row.
 * - `billing_prices`: micro-credits per metered unit, set by the operator; a unit without a row
 *   costs nothing.
 *
 * Version 12 (pre-assigned): 0010 belongs to a parallel branch; migrate() applies missing
 * versions in list order, so a gap is harmless.
 */
export const m0012_billing = {
  version: 12,
  name: 'billing',
  sql: /* sql */ `
create table billing_prices (
  unit text primary key check (unit in ('audio_second', 'llm_input_token', 'llm_output_token', 'tts_character', 'tool_call')),
  price_micros bigint not null check (price_micros >= 0),
  updated_at timestamptz not null default now()
);

create table billing_ledger (
  id uuid primary key,
  workspace_id uuid not null,
  kind text not null check (kind in ('top_up', 'usage_debit', 'adjustment')),
  amount_micros bigint not null,
  conversation_id uuid,
  reference text,
  note text,
  -- usage_debit: quantities per unit, the unit prices applied and the conversation's status
  usage jsonb,
  created_at timestamptz not null default now(),
  check ((kind = 'usage_debit') = (conversation_id is not null)),
  check (kind <> 'top_up' or amount_micros > 0),
  check (kind <> 'usage_debit' or amount_micros <= 0)
);
create unique index billing_ledger_conversation on billing_ledger (conversation_id) where conversation_id is not null;
create unique index billing_ledger_reference on billing_ledger (workspace_id, reference) where reference is not null;
create index billing_ledger_workspace on billing_ledger (workspace_id, created_at desc, id desc);

create table billing_balances (
  workspace_id uuid primary key,
  balance_micros bigint not null,
  updated_at timestamptz not null default now()
);
`,
};
