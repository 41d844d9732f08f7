/**
 * Carrier callbacks registered by the service when it dials (spec: status and recording) plus the
 * asynchronous AMD verdict and the transfer `<Dial action>`. All are unauthenticated forms; the
 * signature is checked when the call's agent has a token. They answer `{received: true}` whether or
 * not the call is still live (the carrier must not retry a late callback).
 */
import type { HandlerContext } from '@connectrpc/connect';
import { verdictFromAnsweredBy } from '../../shared/voice/amd.js';
import { type Ctx, emit, inBackground, resolveAccount, verifyWebhook } from './context.js';
import { advances, type CallRecord, mapCarrierStatus } from './live-calls.js';
import { endSession } from './manage.js';
import * as twiml from './twiml.js';

const RECEIVED = { received: true } as const;

/** The live call a callback is about, after the signature check (token of the call's agent). */
async function callFor(ctx: Ctx, hc: HandlerContext, callId: string, params: Record<string, string>): Promise<CallRecord | undefined> {
  const c = callId && callId.length <= 64 ? await ctx.calls.get(callId) : undefined;
  const agent = c ? await ctx.deps.liveConfig(c.agent_id, hc.signal).catch(() => undefined) : undefined;
  verifyWebhook(ctx, hc, params, resolveAccount(ctx, agent)?.authToken ?? ctx.deps.config.twilioAuthToken);
  return c;
}

export async function onStatus(ctx: Ctx, hc: HandlerContext, req: { callId: string; callStatus: string; callDuration: string; sequenceNumber: string; params: Record<string, string> }) {
  const c = await callFor(ctx, hc, req.callId, req.params);
  if (!c) return RECEIVED;
  const next = mapCarrierStatus(req.callStatus);
  if (next === 'ended') {
    const gone = await ctx.calls.remove(c.call_id);
    if (gone) {
      // The callee hung up, never answered, or the call failed: the engine side ends (or is purged) too.
      await endSession(ctx, gone.session_id, 'carrier_ended');
      const reported = Number(req.callDuration);
      const durationS = Number.isFinite(reported) && req.callDuration !== '' ? reported : ctx.calls.durationS(gone);
      emit(ctx, { type: 'ended', call: gone, detail: req.callStatus, durationS });
      ctx.log.info({ callId: gone.call_id, status: req.callStatus, durationS }, 'call ended (carrier)');
    }
    return RECEIVED;
  }
  if (!next) return RECEIVED;
  const seq = Number(req.sequenceNumber);
  if (Number.isFinite(seq) && req.sequenceNumber !== '' && seq <= c.last_sequence) return RECEIVED;
  if (!advances(c.status, next)) return RECEIVED;
  const patch: Partial<CallRecord> = { status: next };
  if (Number.isFinite(seq) && req.sequenceNumber !== '') patch.last_sequence = seq;
  if (next === 'in_progress' && !c.answered_at_ms) patch.answered_at_ms = ctx.deps.clock.now();
  const saved = await ctx.calls.patch(c.call_id, patch);
  if (saved) emit(ctx, { type: 'status', call: saved, detail: next });
  return RECEIVED;
}

export async function onRecording(ctx: Ctx, hc: HandlerContext, req: { callId: string; recordingUrl: string; recordingSid: string; recordingStatus: string; params: Record<string, string> }) {
  const c = await callFor(ctx, hc, req.callId, req.params);
  if (!c) return RECEIVED;
  const saved = await ctx.calls.patch(c.call_id, { recording_url: req.recordingUrl, recording_sid: req.recordingSid });
  if (saved) emit(ctx, { type: 'recording', call: saved, detail: req.recordingUrl });
  return RECEIVED;
}

/**
 * The AMD verdict: recorded on the call, then routed to the engine node owning the session (a
 * registry command), in the background so the carrier gets its answer at once. When the stream has
 * not been claimed yet the command waits for an owner up to `amdRouteWaitMs`; past that the
 * actor's own verdict timeout decides.
 */
export async function onAmd(ctx: Ctx, hc: HandlerContext, req: { callId: string; answeredBy: string; params: Record<string, string> }) {
  const c = await callFor(ctx, hc, req.callId, req.params);
  if (!c) return RECEIVED;
  const verdict = verdictFromAnsweredBy(req.answeredBy);
  const saved = await ctx.calls.patch(c.call_id, { amd_verdict: verdict, answered_by: req.answeredBy });
  if (saved) emit(ctx, { type: 'amd', call: saved, detail: verdict });
  ctx.log.info({ callId: c.call_id, verdict, answeredBy: req.answeredBy }, 'amd verdict');
  inBackground(ctx, () => routeVerdict(ctx, c.session_id, verdict));
  return RECEIVED;
}

async function routeVerdict(ctx: Ctx, sessionId: string, verdict: string): Promise<void> {
  const { registry, clock } = ctx.deps;
  const until = clock.monotonicMs() + ctx.opts.amdRouteWaitMs;
  for (;;) {
    const owner = await registry.sessions.sessionOwner(sessionId);
    if (owner) {
      await registry.commands.sendCommand(owner, { kind: 'amd', sessionId, payload: { verdict } }, ctx.opts.commandTimeoutMs);
      return;
    }
    if (clock.monotonicMs() >= until || !(await registry.sessions.getSession(sessionId))) {
      ctx.log.warn({ verdict }, 'amd verdict not delivered: the call has no live engine session');
      return;
    }
    await new Promise<void>((r) => clock.setTimeout(r, 100));
  }
}

/** The transferred leg ended: the call is over (`<Hangup/>` ends it at the carrier). */
export async function onDialComplete(ctx: Ctx, hc: HandlerContext, req: { callId: string; dialCallStatus: string; params: Record<string, string> }): Promise<string> {
  const c = await callFor(ctx, hc, req.callId, req.params);
  if (c) {
    const gone = await ctx.calls.remove(c.call_id);
    if (gone) emit(ctx, { type: 'ended', call: gone, detail: `transfer_${req.dialCallStatus || 'completed'}`, durationS: ctx.calls.durationS(gone) });
  }
  return twiml.hangup();
}
