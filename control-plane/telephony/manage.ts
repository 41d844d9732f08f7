/**
 * Live call operations for the caller's own calls: list, get, end, cold transfer (spec rules 2-5).
 * Another user's call is answered exactly like an unknown one (404; `end`: 200 with a message).
 */
import type { HandlerContext } from '@connectrpc/connect';
import type { Principal } from '../http/auth.js';
import { AppError, notFound } from '../../shared/errors.js';
import { RegistryTimeoutError } from '../../shared/registry/index.js';
import { requireE164 } from '../agents/telephony/phone.js';
import { adapterOf, type Ctx, emit, publicBase, resolveAccount } from './context.js';
import type { CarrierName } from './carriers/index.js';
import { CarrierError } from './carriers/types.js';
import type { CallRecord } from './live-calls.js';
import { carrierFailure } from './outbound.js';
import { pageMeta, type Page } from '../http/pagination.js';
import { purgeUnclaimed } from '../voice/purge.js';
import { carrierHangup, dropIfStale } from './stale.js';

export interface LiveCallView {
  call_id: string;
  session_id: string;
  agent_id: string;
  direction: string;
  status: string;
  to_number: string;
  from_number: string;
  telephony_provider: string;
  amd_verdict: string;
  duration: number;
  provider_call_sid: string;
  created_at: string;
  transferred_to: string;
  answered_by: string;
  recording_url: string;
}

export const NOT_IN_REGISTRY = 'call not found in the active call registry (already ended, never placed, or placed by someone else)';

export function view(ctx: Ctx, c: CallRecord): LiveCallView {
  return {
    call_id: c.call_id,
    session_id: c.session_id,
    agent_id: c.agent_id,
    direction: c.direction,
    status: c.status,
    to_number: c.to_number,
    from_number: c.from_number,
    telephony_provider: c.telephony_provider,
    amd_verdict: c.amd_verdict,
    duration: ctx.calls.durationS(c),
    provider_call_sid: c.provider_call_sid,
    created_at: new Date(c.created_at_ms || ctx.deps.clock.now()).toISOString(),
    transferred_to: c.transferred_to,
    answered_by: c.answered_by,
    recording_url: c.recording_url,
  };
}

/**
 * A live call of the caller, or undefined (unknown, ended, stale, another user's, or in a
 * workspace the caller no longer belongs to: a removed member loses the calls they placed at once,
 * like every other workspace resource).
 */
async function ownCall(ctx: Ctx, p: Principal, callId: string): Promise<CallRecord | undefined> {
  const id = callId.trim();
  if (!id || id.length > 64) return undefined;
  const c = await ctx.calls.get(id);
  if (!c || c.user_id !== p.userId) return undefined;
  if (!(await ctx.deps.auth.workspaceIds(p)).includes(c.workspace_id)) return undefined;
  if (await dropIfStale(ctx, c)) return undefined;
  return c;
}

/** The caller's live calls, one page of them; `count` is all of them (the spec's field), `meta` the page. */
export async function listCalls(ctx: Ctx, hc: HandlerContext, pg: Page) {
  const p = await ctx.deps.auth.principal(hc);
  const ws = new Set(await ctx.deps.auth.workspaceIds(p));
  const out: LiveCallView[] = [];
  for (const c of await ctx.calls.list({ userId: p.userId })) if (ws.has(c.workspace_id) && !(await dropIfStale(ctx, c))) out.push(view(ctx, c));
  return { count: out.length, calls: out.slice(pg.offset, pg.offset + pg.limit), meta: pageMeta(pg, out.length) };
}

export async function getCall(ctx: Ctx, hc: HandlerContext, callId: string): Promise<LiveCallView> {
  const p = await ctx.deps.auth.principal(hc);
  const c = await ownCall(ctx, p, callId);
  if (!c) throw notFound('call');
  return view(ctx, c);
}

/** Hangs up at the carrier (`Status=completed`) and ends the engine session; unknown ids answer 200 with a message. */
export async function endCall(ctx: Ctx, hc: HandlerContext, callId: string) {
  const p = await ctx.deps.auth.principal(hc);
  const c = await ownCall(ctx, p, callId);
  if (!c) return { call_id: callId, status: 'ended', message: NOT_IN_REGISTRY };
  const gone = await ctx.calls.remove(c.call_id);
  if (!gone) return { call_id: callId, status: 'ended', message: NOT_IN_REGISTRY };
  // Best effort: closing the engine socket below hangs up too (the TwiML after <Connect> is <Hangup/>).
  await carrierHangup(ctx, gone, 'carrier hangup failed');
  await endSession(ctx, gone.session_id, 'ended_by_api');
  emit(ctx, { type: 'ended', call: gone, detail: 'ended_by_api', durationS: ctx.calls.durationS(gone) });
  return { call_id: gone.call_id, status: 'ended', message: 'call ended' };
}

/**
 * A call whose engine node was lost (issue 23; control-plane/ops/node-sweeper.ts): out of the
 * registry (its seat and campaign slot free), hung up at the carrier, its session forgotten, and
 * the `ended` event once (only the caller whose delete removed the record gets here). A call
 * handed to a person is left alone: its AI stint had already ended. False: nothing to do.
 */
export async function endLostCall(ctx: Ctx, callId: string, reason: string): Promise<boolean> {
  const c = await ctx.calls.get(callId);
  if (!c || c.transferred_to) return false;
  const gone = await ctx.calls.remove(callId);
  if (!gone) return false;
  await carrierHangup(ctx, gone, 'carrier hangup of a lost call failed');
  if (gone.session_id) await ctx.deps.registry.sessions.deleteSession(gone.session_id).catch(() => {});
  emit(ctx, { type: 'ended', call: gone, detail: reason, durationS: ctx.calls.durationS(gone) });
  ctx.log.warn({ callId, reason }, 'live call ended: its engine node is gone');
  return true;
}

/**
 * Cold transfer: the carrier call gets `<Dial>` TwiML (the agent's own number as caller id, the
 * new leg recorded), which stops the media stream; the AI drops off (engine end command).
 */
export async function transferCall(ctx: Ctx, hc: HandlerContext, callId: string, toNumber: string) {
  const p = await ctx.deps.auth.principal(hc);
  const to = requireE164('to_number', toNumber ?? '');
  const c = await ownCall(ctx, p, callId);
  if (!c) throw notFound('call');
  if (!c.provider_call_sid) throw new AppError('INVALID_REQUEST', 'the call has no carrier call sid yet: it cannot be transferred', { details: [{ field: 'call_id', problem: 'no carrier call sid yet' }] });
  // A second transfer would dial a second person from the same call.
  if (c.transferred_to) throw alreadyTransferred(c.transferred_to);
  const live = await ctx.deps.liveConfig(c.agent_id, hc.signal);
  const adapter = adapterOf(ctx, c.telephony_provider);
  const account = adapter ? await resolveAccount(ctx, live, adapter.id, hc.signal) : undefined;
  if (!adapter || !account) throw new AppError('SERVICE_UNAVAILABLE', 'no usable carrier credentials for this agent', { retryAfterS: 30 });
  const callerId = live.telephony?.carrier_phone_number || (c.direction === 'inbound' ? c.to_number : c.from_number);
  const callbackBase = `${publicBase(ctx, hc)}/api/v1/telephony/calls/${c.call_id}`;
  // Marked first: the stream stops as soon as the carrier swaps the TwiML, and a transferred call
  // is not stale. The mark is the claim: of two concurrent transfers only one dials.
  const claim = await ctx.calls.claimTransfer(c.call_id, to);
  if (!claim) throw notFound('call');
  if (claim === 'taken') throw alreadyTransferred((await ctx.calls.get(c.call_id))?.transferred_to || 'another number');
  try {
    // No client abort: a half-applied transfer is worse than a slow answer (the carrier client has its own timeout).
    await adapter.transfer(account, c.provider_call_sid, { toNumber: to, callerId, actionUrl: `${callbackBase}/dial-complete`, callbackBase });
  } catch (err) {
    // The carrier may have moved the call (no answer after sending): the mark stays, so the call
    // is never transferred twice, nor swept as stale and hung up under the person it reached.
    // If the transfer did not happen the AI stays on the call; its session ends with the call.
    if (err instanceof CarrierError && err.outcomeUnknown) {
      ctx.log.warn({ callId: c.call_id, err }, 'transfer outcome unknown: the call stays marked transferred');
      throw carrierFailure(err, 'the transfer may have happened');
    }
    await ctx.calls.patch(c.call_id, { transferred_to: '' });
    throw carrierFailure(err, 'the transfer may have happened');
  }
  await endSession(ctx, c.session_id, 'transferred');
  const saved = await ctx.calls.get(c.call_id);
  if (saved) emit(ctx, { type: 'transferred', call: saved, detail: to });
  ctx.log.info({ callId: c.call_id }, 'call transferred to a human');
  return { call_id: c.call_id, transferred: true, to_number: to };
}

function alreadyTransferred(to: string): AppError {
  return new AppError('CONFLICT', 'the call was already transferred (or its transfer may have happened)', { details: [{ field: 'call_id', problem: `already transferred to ${to}` }] });
}

/**
 * Hand-off to a person on the agent portal (issue 21, docs/portal.md): like a cold transfer, but
 * the carrier dials the person (carriers/person.ts: a Twilio client identity, a SIP endpoint, a
 * Vonage app user) and bridges the audio. No request context: the accepting agent's presence
 * socket triggers it. The carrier that dialed; undefined when the call is gone, not yet answered,
 * already transferred, its carrier cannot hand off (Exotel, or no address for the person on this
 * account), or the carrier refused: the AI is still on the call then.
 */
export async function dialClient(ctx: Ctx, callId: string, identity: string, base: string): Promise<CarrierName | undefined> {
  const c = await ctx.calls.get(callId);
  if (!c || !c.provider_call_sid || c.transferred_to) return undefined;
  const target = await personTarget(ctx, c, identity);
  if ('refusal' in target) return undefined;
  const { adapter, account, address, live } = target;
  const callerId = live.telephony?.carrier_phone_number || (c.direction === 'inbound' ? c.to_number : c.from_number);
  const claim = await ctx.calls.claimTransfer(c.call_id, address);
  if (!claim || claim === 'taken') return undefined;
  try {
    await adapter.handoff!.dial(account, c.provider_call_sid, { address, callerId, actionUrl: `${base}/api/v1/telephony/calls/${c.call_id}/dial-complete`, callbackBase: `${base}/api/v1/telephony/calls/${c.call_id}` });
  } catch (err) {
    // As for a cold transfer: a request that may have been carried out keeps the mark (never a
    // second dial, never swept and hung up under the person it may have reached).
    if (err instanceof CarrierError && err.outcomeUnknown) {
      ctx.log.warn({ err, callId, carrier: adapter.id }, 'hand-off dial outcome unknown: the call stays marked transferred');
      return undefined;
    }
    await ctx.calls.patch(c.call_id, { transferred_to: '' });
    ctx.log.warn({ err, callId, carrier: adapter.id }, 'hand-off dial refused by the carrier');
    return undefined;
  }
  await endSession(ctx, c.session_id, 'transferred');
  const saved = await ctx.calls.get(c.call_id);
  if (saved) emit(ctx, { type: 'transferred', call: saved, detail: address });
  return adapter.id;
}

/**
 * Why a live call cannot be handed to a person (asked before anyone is offered it), or undefined
 * when it can: its carrier has a hand-off, the agent has an account on it, and the account an
 * address for a person (the identity only fills the template, so any one answers for all).
 */
export async function handOffRefusal(ctx: Ctx, callId: string): Promise<string | undefined> {
  const c = await ctx.calls.get(callId);
  if (!c) return 'the call is not live';
  const t = await personTarget(ctx, c, 'human-0');
  return 'refusal' in t ? t.refusal : undefined;
}

async function personTarget(ctx: Ctx, c: CallRecord, identity: string) {
  const adapter = adapterOf(ctx, c.telephony_provider);
  const carrier = c.telephony_provider || 'twilio';
  if (!adapter?.handoff) {
    ctx.log.info({ callId: c.call_id, carrier }, 'hand-off impossible: the carrier cannot dial a person');
    return { refusal: `${carrier} cannot hand a call to a person (docs/telephony.md, "Hand-off to a person")` };
  }
  const live = await ctx.deps.liveConfig(c.agent_id);
  const account = await resolveAccount(ctx, live, adapter.id);
  if (!account) {
    ctx.log.info({ callId: c.call_id, carrier: adapter.id }, 'hand-off impossible: no carrier account for the agent');
    return { refusal: `no ${adapter.id} credentials for the call's agent (a workspace carrier account or the deployment's)` };
  }
  const address = adapter.handoff.address(account, identity);
  if (!address) {
    ctx.log.info({ callId: c.call_id, carrier: adapter.id }, 'hand-off impossible: no address for the person on this carrier account (person_uri)');
    return { refusal: `the ${adapter.id} account has no address for a person (person_uri: docs/telephony.md)` };
  }
  return { adapter, account, address, live };
}

/** Ends the engine side of a call (whichever node owns it); a session never connected is purged. */
export async function endSession(ctx: Ctx, sessionId: string, reason: 'ended_by_api' | 'transferred' | 'carrier_ended'): Promise<void> {
  if (!sessionId) return;
  const { registry } = ctx.deps;
  try {
    const owner = await registry.sessions.sessionOwner(sessionId);
    if (owner) await registry.commands.sendCommand(owner, { kind: 'end', sessionId, payload: { reason } }, ctx.opts.commandTimeoutMs);
    else {
      // Never connected (an unanswered call): its node also drops what it pre-warmed for it.
      const stored = await registry.sessions.getSession(sessionId);
      if (stored) await purgeUnclaimed(registry, stored, reason, { commandTimeoutMs: ctx.opts.commandTimeoutMs, log: ctx.log });
    }
  } catch (err) {
    if (!(err instanceof RegistryTimeoutError) && (err as { code?: string }).code !== 'NOT_FOUND') {
      ctx.log.warn({ err }, 'ending the voice session failed');
    }
  }
}
