/**
 * Ending calls nobody will end for us: a call whose voice session is gone (live-calls.ts
 * `isStale`) is dropped when someone reads it or needs its seat, and the carrier hang-up that
 * every forced end sends.
 */
import { adapterOf, type Ctx, emit, resolveAccount } from './context.js';
import type { CarrierName } from './carriers/index.js';
import type { CallRecord } from './live-calls.js';

/** Hangs the call up at its carrier (best effort: logged, never thrown). */
export async function carrierHangup(ctx: Ctx, c: CallRecord, failure: string): Promise<void> {
  if (!c.provider_call_sid) return;
  const adapter = adapterOf(ctx, c.telephony_provider);
  if (!adapter) return;
  const account = await resolveAccount(ctx, await ctx.deps.liveConfig(c.agent_id).catch(() => undefined), adapter.id as CarrierName).catch(() => undefined);
  if (!account) return;
  await adapter.hangup(account, c.provider_call_sid).catch((err: unknown) => ctx.log.warn({ callId: c.call_id, err, carrier: adapter.id }, failure));
}

/**
 * Removes a stale call (its seat and campaign slot free) and tells the `ended` hooks once. A
 * connected call's session ended (`session_ended`). A call never reported answered outlived its
 * session's answer window (ring timeout + 30 s) with no final carrier status (a lost or refused
 * callback): it is ended `no-answer` and hung up at the carrier, so a late answer cannot ring
 * into a call with no agent. True when the call was stale.
 */
export async function dropIfStale(ctx: Ctx, c: CallRecord): Promise<boolean> {
  if (!(await ctx.calls.isStale(c))) return false;
  const gone = await ctx.calls.remove(c.call_id);
  if (!gone) return true;
  const answered = gone.status === 'in_progress';
  if (!answered) {
    ctx.log.warn({ callId: gone.call_id, status: gone.status, carrier: gone.telephony_provider }, 'call never reported answered or ended by its carrier: ended as no-answer after its answer window');
    await carrierHangup(ctx, gone, 'carrier hangup of an unreported call failed');
  }
  emit(ctx, { type: 'ended', call: gone, detail: answered ? 'session_ended' : 'no-answer' });
  return true;
}
