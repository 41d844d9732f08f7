/**
 * The end of a call whose credit ran out (BILLING_ENABLED; docs/billing.md). The engine cannot
 * see the ledger mid-call, so it got a time allowance at connect (balance / price per second);
 * when that is spent it waits for the next turn boundary (the agent's reply finished, or the
 * caller's turn ended before a reply starts), speaks this notice and hangs up. The overdraft is
 * therefore at most one turn; the conversation's debit settles the exact amount afterwards.
 */
import { INSUFFICIENT_BALANCE, type ServerEvent } from '../../shared/protocol/voice-socket.js';

export { INSUFFICIENT_BALANCE };
export const CREDIT_NOTICE_TEXT = 'Your credit has run out. Goodbye!';

/** Sent when the notice starts: the spec's failure frame for an empty balance (not fatal: the notice still plays). */
export const CREDIT_EXHAUSTED_EVENT: ServerEvent = { type: 'error', code: INSUFFICIENT_BALANCE, message: 'credit balance exhausted: the call ends after this notice' };
