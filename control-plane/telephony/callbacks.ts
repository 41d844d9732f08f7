/**
 * Carrier callbacks registered by the service when it dials (spec: status and recording) plus the
 * asynchronous AMD verdict and the transfer `<Dial action>`. All are unauthenticated forms; the
 * signature is checked when the call's agent has a token. They answer `{received: true}` whether or
 * not the call is still live (the carrier must not retry a late callback), and when a status or AMD
 * callback names another carrier call than this one (ignored: `namesAnotherCall`).
 */
import type { HandlerContext } from '@connectrpc/connect';
import { verdictFromAnsweredBy } from '../../shared/voice/amd.js';
import type { CarrierAdapter, CarrierCallEvent, CarrierRecording, WebhookRequest } from './carriers/index.js';
import { adapterOf, type Ctx, emit, inBackground, resolveAccount, verifyWebhook, webhookOf } from './context.js';
import { advances, type CallRecord, mapCarrierStatus } from './live-calls.js';
import { endSession } from './manage.js';
import { extendAnswerWindow } from './outbound.js';
import { recordingRef } from './carriers/recording.js';
import { isUuid } from '../../shared/ids.js';

const RECEIVED = { received: true } as const;

/**
 * The live call a callback is about, after the signature check by the call's carrier (the key of
 * the call's agent). Twilio-form callbacks of an unknown call are checked as Twilio's (SignalWire's
 * when they carry its header). `adapter`: the carrier whose route was called (events/{carrier}).
 */
async function callFor(ctx: Ctx, hc: HandlerContext, callId: string, req: WebhookRequest, adapter?: CarrierAdapter): Promise<CallRecord | undefined> {
  return (await verifiedCall(ctx, hc, callId, req, adapter)).call;
}

/**
 * `callFor`, and for an events route whose call has ended: `late`, the AI agent of that call when
 * the person's leg's recording is still awaited from this carrier (`lateRecordings`), the callback
 * then verified with that agent's account.
 */
async function verifiedCall(ctx: Ctx, hc: HandlerContext, callId: string, req: WebhookRequest, adapter?: CarrierAdapter): Promise<{ call?: CallRecord; late?: { agentId: string } }> {
  const c = callId && callId.length <= 64 ? await ctx.calls.get(callId) : undefined;
  const awaited = !c && adapter && isUuid(callId) ? await ctx.deps.lateRecordings?.awaiting(callId) : undefined;
  const late = awaited?.carrier === adapter?.id ? awaited : undefined;
  const byHeader = hc.requestHeader.get('x-signalwire-signature') ? 'signalwire' : 'twilio';
  const a = adapter ?? adapterOf(ctx, c?.telephony_provider || byHeader) ?? adapterOf(ctx, 'twilio')!;
  const agentId = c?.agent_id ?? late?.agentId;
  const agent = agentId ? await ctx.deps.liveConfig(agentId, hc.signal).catch(() => undefined) : undefined;
  verifyWebhook(ctx, hc, a, req, await resolveAccount(ctx, agent, a.id, hc.signal));
  // A call of another carrier posting to this carrier's route is not this call's.
  if (c && adapter && c.telephony_provider !== adapter.id) return {};
  return { call: c, late };
}

const formHook = (ctx: Ctx, hc: HandlerContext, params: Record<string, string>) => webhookOf(ctx, hc, new URLSearchParams(params).toString(), params);

/**
 * `POST /telephony/calls/{call_id}/events/{carrier}`: carriers that post JSON events (or one URL
 * for every event): verified and parsed by the adapter, applied like the Twilio form callbacks.
 */
export async function onCarrierEvents(ctx: Ctx, hc: HandlerContext, adapter: CarrierAdapter, callId: string, req: WebhookRequest): Promise<string> {
  const { call: c, late } = await verifiedCall(ctx, hc, callId, req, adapter);
  if (late) {
    // The call is over; only the person's leg's recording still matters.
    for (const ev of adapter.parseEvents(req)) if (ev.kind === 'leg_recording') await ctx.deps.lateRecordings!.arrived(callId, adapter.id, ev.recording);
  }
  if (c) {
    for (const ev of adapter.parseEvents(req)) {
      // Carriers that name the call only once it is answered (Plivo: request_uuid at dial, then
      // CallUUID): the record follows, so hang-up and transfer address the live call.
      if ('callSid' in ev && ev.callSid && ev.callSid !== c.provider_call_sid && !c.transferred_to) await ctx.calls.patch(c.call_id, { provider_call_sid: ev.callSid });
      await applyEvent(ctx, c, ev, adapter, hc);
    }
  }
  return (c && adapter.answerEvent?.(req)) || adapter.documents.empty();
}

async function applyEvent(ctx: Ctx, c: CallRecord, ev: CarrierCallEvent, adapter: CarrierAdapter, hc: HandlerContext): Promise<void> {
  switch (ev.kind) {
    case 'stream_ended': {
      // Our side ended the stream (the agent hung up, a refusal): the carrier call must end too.
      const now = await ctx.calls.get(c.call_id);
      if (!now || now.transferred_to) return;
      const account = await resolveAccount(ctx, await ctx.deps.liveConfig(c.agent_id, hc.signal).catch(() => undefined), adapter.id, hc.signal);
      if (account) await adapter.hangup(account, ev.callSid || c.provider_call_sid).catch((err: unknown) => ctx.log.warn({ err, callId: c.call_id }, 'carrier hangup after the stream ended failed'));
      return;
    }
    case 'status':
      return applyStatus(ctx, c, ev.status, ev.durationS, ev.sequence);
    case 'amd':
      return applyAmd(ctx, c, ev.answeredBy);
    case 'recording':
      return applyRecording(ctx, c, ev.url, ev.sid);
    case 'dial_complete':
      return applyDialComplete(ctx, c, ev.status, ev.recording);
    case 'leg_recording':
      return applyLegRecording(ctx, c, ev.recording);
    default:
      return;
  }
}

/**
 * Whether a form callback's `CallSid` names a carrier call other than the one this call id is
 * known by. Such a callback must not change the call: the signature proves only that the carrier
 * account sent it, not that it is about this call (a misrouted or replayed callback of another call
 * of the same account). It is answered 200 like any other (a non-2xx makes the carrier retry the
 * same wrong callback) and logged. Before the carrier's create returns the sid is not known yet
 * (callbacks can beat it): nothing to compare, accepted. A transferred call keeps its sid.
 */
function namesAnotherCall(ctx: Ctx, c: CallRecord, callSid: string, route: 'status' | 'amd' | 'recording'): boolean {
  if (!c.provider_call_sid || callSid === c.provider_call_sid) return false;
  ctx.log.warn({ callId: c.call_id, route, callSid, providerCallSid: c.provider_call_sid }, "carrier callback ignored: its CallSid is not this call's");
  return true;
}

export async function onStatus(
  ctx: Ctx,
  hc: HandlerContext,
  req: { callId: string; callStatus: string; callDuration: string; callSid: string; sequenceNumber: string; params: Record<string, string> },
) {
  const c = await callFor(ctx, hc, req.callId, formHook(ctx, hc, req.params));
  if (!c || namesAnotherCall(ctx, c, req.callSid, 'status')) return RECEIVED;
  // The dial could not store the carrier's sid (a registry blip after the create): the first
  // signed callback names it, so hang-up, transfer and the CallSid check work for the call.
  if (!c.provider_call_sid && req.callSid && !c.transferred_to) {
    await ctx.calls.patch(c.call_id, { provider_call_sid: req.callSid });
    c.provider_call_sid = req.callSid;
  }
  const d = Number(req.callDuration);
  const seq = Number(req.sequenceNumber);
  await applyStatus(ctx, c, req.callStatus, req.callDuration !== '' && Number.isFinite(d) ? d : undefined, req.sequenceNumber !== '' && Number.isFinite(seq) ? seq : undefined);
  return RECEIVED;
}

/**
 * A placed call not connected yet whose end we have not heard of, asked of its carrier: a final
 * status lost on its way to us (a callback answered 503 while the registry was down; carriers do
 * not send a status callback again) is applied as its callback would have been, so the call's seat
 * and its campaign attempt are freed with the carrier's own outcome, not ended as `no-answer` when
 * its session's answer window closes (the ring timeout plus margins: minutes). A connected call is
 * judged by its media and session instead. Not before `carrierRecheckMs` after the placement, then
 * at most once per `carrierRecheckMs` per call across replicas (a registry window). `ended`: the
 * call ended; `asked`: the carrier was asked and the call goes on; `not_asked`: nothing to ask
 * (not due, no carrier sid, connected, a carrier without a status read).
 */
export async function reconcileWithCarrier(ctx: Ctx, callId: string): Promise<'ended' | 'asked' | 'not_asked'> {
  const c = await ctx.calls.get(callId);
  if (!c || !unconnected(c)) return 'not_asked';
  const adapter = adapterOf(ctx, c.telephony_provider);
  if (!adapter?.callStatus) return 'not_asked';
  if (ctx.deps.clock.now() - c.created_at_ms < ctx.opts.carrierRecheckMs) return 'not_asked';
  if ((await ctx.deps.registry.windows.incrWindow(`carrier-status:${callId}`, ctx.opts.carrierRecheckMs)) !== 1) return 'not_asked';
  const account = await resolveAccount(ctx, await ctx.deps.liveConfig(c.agent_id).catch(() => undefined), adapter.id).catch(() => undefined);
  if (!account) return 'not_asked';
  let reported: Awaited<ReturnType<NonNullable<CarrierAdapter['callStatus']>>>;
  try {
    reported = await adapter.callStatus(account, c.provider_call_sid);
  } catch (err) {
    ctx.log.warn({ callId, carrier: adapter.id, err: (err as Error).message }, 'carrier status of a quiet call could not be read');
    return 'asked';
  }
  if (!reported) return 'asked';
  // Read again: a callback may have moved the call on while the carrier answered (what it said is
  // then applied only if it still moves the call forward).
  const now = await ctx.calls.get(callId);
  if (!now || !unconnected(now)) return 'asked';
  const ends = mapCarrierStatus(reported.status) === 'ended';
  if (ends) ctx.log.warn({ callId, status: reported.status, carrier: adapter.id }, "call ended at its carrier and its final status callback never reached us: applied from the carrier's API");
  await applyStatus(ctx, now, reported.status, reported.durationS, undefined);
  return ends && (await ctx.calls.get(callId)) === undefined ? 'ended' : 'asked';
}

/** Placed (the carrier named it), not answered as far as we know, no media, not handed to a person. */
const unconnected = (c: CallRecord) => Boolean(c.provider_call_sid) && !c.transferred_to && c.status !== 'in_progress' && !c.media_connected_at_ms;

/** A carrier call status (Twilio's vocabulary): forward only, newer only; a final one ends the call. */
async function applyStatus(ctx: Ctx, c: CallRecord, callStatus: string, reportedDurationS: number | undefined, seq: number | undefined): Promise<void> {
  const req = { callStatus };
  const next = mapCarrierStatus(req.callStatus);
  if (next === 'ended') {
    const gone = await ctx.calls.remove(c.call_id);
    if (gone) {
      // The callee hung up, never answered, or the call failed: the engine side ends (or is purged) too.
      await endSession(ctx, gone.session_id, 'carrier_ended');
      const durationS = reportedDurationS ?? ctx.calls.durationS(gone);
      emit(ctx, { type: 'ended', call: gone, detail: req.callStatus, durationS });
      ctx.log.info({ callId: gone.call_id, status: req.callStatus, durationS }, 'call ended (carrier)');
    }
    return;
  }
  if (!next) return;
  if (seq !== undefined && seq <= c.last_sequence) return;
  if (!advances(c.status, next)) return;
  const patch: Partial<CallRecord> = { status: next };
  if (seq !== undefined) patch.last_sequence = seq;
  if (next === 'in_progress' && !c.answered_at_ms) patch.answered_at_ms = ctx.deps.clock.now();
  const saved = await ctx.calls.patch(c.call_id, patch);
  if (saved) emit(ctx, { type: 'status', call: saved, detail: next });
  // A call queued at the carrier rings (or answers) late: its answer window starts again from there.
  if (c.direction === 'outbound') await extendAnswerWindow(ctx, c.session_id, ctx.deps.clock.now());
}

export async function onRecording(ctx: Ctx, hc: HandlerContext, req: { callId: string; recordingUrl: string; recordingSid: string; recordingStatus: string; params: Record<string, string> }) {
  const c = await callFor(ctx, hc, req.callId, formHook(ctx, hc, req.params));
  if (c && !namesAnotherCall(ctx, c, req.params.CallSid ?? '', 'recording')) await applyRecording(ctx, c, req.recordingUrl, req.recordingSid);
  return RECEIVED;
}

/** Kept only as a recording we would fetch (an http(s) URL, bounded; recordingRef): never `javascript:` or the like in a call record. */
async function applyRecording(ctx: Ctx, c: CallRecord, url: string, sid: string): Promise<void> {
  const ref = recordingRef(url, sid);
  if (!ref) {
    ctx.log.warn({ callId: c.call_id }, 'carrier recording callback ignored: its recording URL is not an http(s) URL');
    return;
  }
  const saved = await ctx.calls.patch(c.call_id, { recording_url: ref.url, recording_sid: ref.sid });
  if (saved) emit(ctx, { type: 'recording', call: saved, detail: ref.url });
}

/**
 * The AMD verdict: recorded on the call, then routed to the engine node owning the session (a
 * registry command), in the background so the carrier gets its answer at once. When the stream has
 * not been claimed yet the command waits for an owner up to `amdRouteWaitMs`; past that the
 * actor's own verdict timeout decides.
 */
export async function onAmd(ctx: Ctx, hc: HandlerContext, req: { callId: string; answeredBy: string; callSid: string; params: Record<string, string> }) {
  const c = await callFor(ctx, hc, req.callId, formHook(ctx, hc, req.params));
  if (c && !namesAnotherCall(ctx, c, req.callSid, 'amd')) await applyAmd(ctx, c, req.answeredBy);
  return RECEIVED;
}

/** `answeredBy` in Twilio's vocabulary (`human`, `machine_end_beep`, ...): adapters map theirs onto it. */
async function applyAmd(ctx: Ctx, c: CallRecord, answeredBy: string): Promise<void> {
  const verdict = verdictFromAnsweredBy(answeredBy);
  const saved = await ctx.calls.patch(c.call_id, { amd_verdict: verdict, answered_by: answeredBy });
  if (saved) emit(ctx, { type: 'amd', call: saved, detail: verdict });
  ctx.log.info({ callId: c.call_id, verdict, answeredBy }, 'amd verdict');
  inBackground(ctx, () => routeVerdict(ctx, c.session_id, verdict));
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

/**
 * The person's leg's recording, named before the call ended: kept on the record for the `ended`
 * event (emit). A call that ended meanwhile (the patch finds no record) hands it on as a late one.
 */
async function applyLegRecording(ctx: Ctx, c: CallRecord, recording: CarrierRecording): Promise<void> {
  const saved = await ctx.calls.patch(c.call_id, { leg_recording_url: recording.url, leg_recording_sid: recording.sid });
  if (!saved) await ctx.deps.lateRecordings?.arrived(c.call_id, c.telephony_provider, recording);
}

/** The transferred leg ended: the call is over (`<Hangup/>` ends it at the carrier). */
export async function onDialComplete(ctx: Ctx, hc: HandlerContext, req: { callId: string; dialCallStatus: string; params: Record<string, string> }): Promise<string> {
  const c = await callFor(ctx, hc, req.callId, formHook(ctx, hc, req.params));
  if (c) await applyDialComplete(ctx, c, req.dialCallStatus, recordingRef(req.params.RecordingUrl, req.params.RecordingSid));
  return (adapterOf(ctx, c?.telephony_provider ?? 'twilio') ?? adapterOf(ctx, 'twilio')!).documents.hangup();
}

async function applyDialComplete(ctx: Ctx, c: CallRecord, status: string, dialRecording?: { url: string; sid: string }): Promise<void> {
  const gone = await ctx.calls.remove(c.call_id);
  if (gone) emit(ctx, { type: 'ended', call: gone, detail: `transfer_${status || 'completed'}`, durationS: ctx.calls.durationS(gone), dialRecording });
}
