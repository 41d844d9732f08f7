/**
 * The credit check of a connecting socket (BILLING_ENABLED; docs/billing.md): one registry read
 * of the state the control plane published for the call's workspace, never Postgres. The answer
 * is a time allowance for the call: balance / price of one audio second.
 */
import { MAX_TIMER_MS } from '../shared/clock.js';
import type { BillingState } from '../shared/registry/index.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import type { EngineContext } from './engine-context.js';

/** `refuse`: no credit (the spec's insufficient_balance frame). `allowanceMs` absent: no limit. */
export type CreditVerdict = { ok: true; allowanceMs?: number } | { ok: false };

const UNLIMITED: CreditVerdict = { ok: true };

export async function creditAtConnect(ctx: EngineContext, sc: SessionConfig): Promise<CreditVerdict> {
  if (!ctx.config.billingEnabled) return UNLIMITED;
  return creditVerdict(await ctx.registry.billing.getBillingState(sc.workspace_id));
}

/**
 * Never published counts as empty (fail closed: the control plane republishes every state when
 * it starts). Audio billed per started second: less than one second of credit is none.
 */
export function creditVerdict(state: BillingState | undefined): CreditVerdict {
  const balance = state?.balanceMicros ?? 0;
  if (balance <= 0) return { ok: false };
  const perSecond = state?.perSecondMicros ?? 0;
  if (perSecond <= 0) return UNLIMITED;
  if (balance < perSecond) return { ok: false };
  const allowanceMs = Math.floor((balance / perSecond) * 1000);
  // A timer cannot wait longer than 2^31 - 1 ms (24.8 days): Node fires a longer one at once, which
  // cut off every call of a workspace with that much credit. No call lasts that long: no limit.
  return allowanceMs > MAX_TIMER_MS ? UNLIMITED : { ok: true, allowanceMs };
}
