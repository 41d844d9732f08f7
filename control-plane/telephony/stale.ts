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
 * connected call (answered, or its media reached an engine) whose session ended: `session_ended`,
 * with the answer time the media gave when the carrier's "answered" callback was lost. A call
 * never connected outlived its session's answer window (ring timeout + 30 s) with no final
 * carrier status (a lost or refused callback): `no-answer`, and hung up at the carrier in the
 * background (a read or a seat check never waits on the carrier), so a late answer cannot ring
 * into a call with no agent. True when the call was stale.
 */
export async function dropIfStale(ctx: Ctx, c: CallRecord): Promise<boolean> {
  if (!(await ctx.calls.isStale(c))) return false;
  const gone = await ctx.calls.remove(c.call_id);
  if (!gone) return true;
  const mediaAtMs = gone.media_connected_at_ms ?? 0;
  if (gone.status === 'in_progress' || mediaAtMs > 0) {
    const call = gone.answered_at_ms ? gone : { ...gone, status: 'in_progress' as const, answered_at_ms: mediaAtMs };
    // The carrier's final callback (with its duration) comes after this, to a record that is gone:
    // the length is ours, from the answer to the end of the media (or now).
    const endMs = gone.media_ended_at_ms || ctx.deps.clock.now();
    const durationS = call.answered_at_ms ? Math.max(0, Math.round((endMs - call.answered_at_ms) / 1000)) : 0;
    emit(ctx, { type: 'ended', call, detail: 'session_ended', durationS });
    return true;
  }
  ctx.log.warn({ callId: gone.call_id, status: gone.status, carrier: gone.telephony_provider }, 'call never reported answered or ended by its carrier: ended as no-answer after its answer window');
  void carrierHangup(ctx, gone, 'carrier hangup of an unreported call failed');
  emit(ctx, { type: 'ended', call: gone, detail: 'no-answer' });
  return true;
}

/** dropIfStale by id (the campaign dialer's recovery): true when the call was stale and is gone now. */
export async function endIfStale(ctx: Ctx, callId: string): Promise<boolean> {
  const c = await ctx.calls.get(callId);
  return c ? dropIfStale(ctx, c) : false;
}
