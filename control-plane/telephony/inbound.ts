/**
 * `POST /telephony/calls/inbound` (Twilio) and `/telephony/calls/inbound/{carrier}`: the carrier's
 * voice webhook (spec "Inbound behaviour"), through the carrier's adapter (carriers/).
 *
 * 1. Signature check (when a token is known), agent lookup by the dialled `To`.
 * 2. No agent, or `call_direction` `outbound`: a spoken message, then hang up.
 * 3. A seat in the workspace pool (agent metadata `max_concurrent_calls`); none free: hold audio
 *    and `<Redirect>` back here (`?hold=n`) until one frees, for at most `maxHoldRounds`.
 * 4. A voice session (with `call_id`) on the engine node chosen for it, and TwiML connecting the
 *    call to that node's carrier socket with `session_id`, `agent_id` and `call_id` parameters.
 *
 * Event carriers (Telnyx) do the same by REST (`answerInbound`): a refusal or a hold round is a
 * spoken step whose end event comes back here (`InboundCall.step`: the hold round, or "refused":
 * hang up), and each step is bounded by a deadline job (inbound-deadline.ts). A call connected
 * after hold keeps posting its events here (its answer could not name the call's events URL):
 * they are handed to the call's event handler.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { AppError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { LiveAgentConfig } from '../agents/index.js';
import type { StartedSession, StartRequest } from '../voice/index.js';
import { toE164 } from '../agents/telephony/phone.js';
import { onCarrierEvents } from './callbacks.js';
import { CarrierError, type CarrierAccount, type CarrierAdapter, type HoldRound, type InboundAction, type InboundCall, type WebhookRequest } from './carriers/index.js';
import { type Ctx, emit, maskNumber, publicBase, resolveAccount, verifyWebhook } from './context.js';
import { scheduleStepDeadline } from './inbound-deadline.js';
import { newCallRecord } from './live-calls.js';
import { dropIfStale } from './stale.js';

export const MESSAGES = {
  notInService: 'Sorry, the number you have called is not in service. Goodbye.',
  noInbound: 'Sorry, this number does not take incoming calls. Goodbye.',
  unavailable: 'Sorry, we cannot take your call right now. Please try again later. Goodbye.',
  hold: 'All of our agents are busy right now. Please hold and we will be with you shortly.',
  holdTimeout: 'Sorry, all of our agents are still busy. Please call again later. Goodbye.',
} as const;

export interface InboundInput {
  hold: number;
  /** The webhook as received (verified and parsed by the carrier's adapter). */
  webhook: WebhookRequest;
}

/**
 * The inbound voice webhook of `adapter`'s carrier: the document to answer it with (document
 * carriers), or `documents.empty()` after acting by REST (event carriers: `answerInbound`).
 */
export async function answerInbound(ctx: Ctx, hc: HandlerContext, adapter: CarrierAdapter, req: InboundInput): Promise<string> {
  const { deps, log } = ctx;
  const docs = adapter.documents;
  const call = adapter.parseInbound(req.webhook);
  if (!call && adapter.answerInbound) {
    const live = await liveCallOf(ctx, adapter, req.webhook);
    if (live) return onCarrierEvents(ctx, hc, adapter, live, req.webhook);
  }
  const to = toE164(call?.to ?? '');
  const agent = to ? await deps.findAgentByNumber(to, hc.signal) : undefined;
  const account = await resolveAccount(ctx, agent, adapter.id, hc.signal);
  verifyWebhook(ctx, hc, adapter, req.webhook, account);
  if (!call) return docs.empty();
  const base = publicBase(ctx, hc);
  const callSid = call.callSid.trim();
  // Event carriers act by REST on the call: with no account there is nothing to act with.
  const act = adapter.answerInbound && account ? (a: InboundAction) => eventStep(ctx, adapter, account, call, agent, a) : undefined;
  const refuse = async (text: string): Promise<string> => {
    if (!adapter.answerInbound) return docs.sayAndHangup(text);
    await act?.({ sayAndHangup: text });
    return docs.empty();
  };
  if (call.step?.kind === 'refused') {
    await act?.({ hangup: true });
    return docs.empty();
  }
  if (!agent || !callSid) {
    log.info({ to: maskNumber(to ?? ''), hasSid: Boolean(callSid), carrier: adapter.id }, 'inbound call to an unbound number refused');
    return refuse(MESSAGES.notInService);
  }
  const binding = agent.telephony;
  if (binding?.carrier_account_sid && call.accountSid && binding.carrier_account_sid !== call.accountSid) {
    log.warn({ agentId: agent.agent_id }, 'inbound call from another carrier account refused');
    return refuse(MESSAGES.notInService);
  }
  if ((binding?.call_direction ?? 'both') === 'outbound') {
    log.info({ agentId: agent.agent_id }, 'inbound call refused: agent is outbound only');
    return refuse(MESSAGES.noInbound);
  }

  // The carrier retried the webhook, or the caller comes back from hold after we already placed it.
  const existing = await ctx.calls.bySid(callSid);
  if (existing?.stream_url) {
    if (adapter.answerInbound) return docs.empty();
    return docs.connect(existing.stream_url, { session_id: existing.session_id, agent_id: existing.agent_id, call_id: existing.call_id }, account);
  }
  // After the lookup above: a call already connected runs to its end (a re-delivered webhook).
  if (agent.is_active === false) {
    log.info({ agentId: agent.agent_id }, 'inbound call refused: agent is inactive');
    return refuse(MESSAGES.notInService);
  }

  const callId = newId();
  const rec = newCallRecord({
    call_id: callId,
    agent_id: agent.agent_id,
    workspace_id: agent.workspace_id,
    user_id: agent.user_id,
    direction: 'inbound',
    status: 'in_progress',
    to_number: to!,
    from_number: toE164(call.from ?? '') ?? call.from ?? '',
    telephony_provider: adapter.id,
    provider_call_sid: callSid,
    created_at_ms: deps.clock.now(),
    answered_at_ms: deps.clock.now(),
  });
  const limit = seatLimit(agent);
  // Document carriers name the round in the URL (`?hold=n`); event carriers in the step's state.
  const round = call.step?.kind === 'hold' ? call.step.round : adapter.answerInbound ? 0 : req.hold;
  const hold = async (): Promise<string> => {
    if (round >= ctx.opts.maxHoldRounds) return refuse(MESSAGES.holdTimeout);
    const sound = holdRound(ctx, agent, round, call.step?.kind === 'hold' && call.step.pauseOnly);
    if (!adapter.answerInbound) return docs.hold({ ...sound, redirectUrl: `${base}${inboundPath(adapter)}?hold=${round + 1}` });
    await act?.({ hold: { ...sound, nextRound: round + 1 } });
    return docs.empty();
  };
  if (!(await takeSeat(ctx, rec, limit))) return hold();

  let session;
  try {
    session = await startCallSession(
      ctx,
      {
        agent_id: agent.agent_id,
        user_id: agent.user_id,
        call_id: callId,
        call_direction: 'inbound',
        // The transport hint names the carrier's media stream (its wire protocol).
        connection_type: adapter.id,
        telephony_provider: adapter.id,
        session_metadata: { from_number: rec.from_number, to_number: rec.to_number, provider_call_sid: callSid, call_started_at: new Date(rec.created_at_ms).toISOString(), ...callerNameOf(call) },
        from_number: rec.from_number,
        to_number: rec.to_number,
      },
      hc.signal,
    );
  } catch (err) {
    // No engine capacity is a seat shortage too: hold rather than refuse.
    if (err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE') return hold();
    log.warn({ agentId: agent.agent_id, err, code: (err as AppError).code }, 'inbound call could not start a voice session');
    return refuse(MESSAGES.unavailable);
  }
  // The path names the carrier's call id; the engine trusts only the stream's session parameters.
  const streamUrl = `${session.node_ws_url}/api/v1/voice/ws/${adapter.id}/${encodeURIComponent(callSid)}`;
  const params = { session_id: session.session_id, agent_id: agent.agent_id, call_id: callId };
  const saved = await ctx.calls.patch(callId, { session_id: session.session_id, stream_url: streamUrl });
  if (saved) emit(ctx, { type: 'status', call: saved, detail: 'in_progress' });
  log.info({ callId, agentId: agent.agent_id, nodeId: session.node_id, from: maskNumber(rec.from_number), carrier: adapter.id, heldRounds: round }, 'inbound call connected to the engine');
  if (!adapter.answerInbound) return docs.connect(streamUrl, params, account);
  try {
    if (!account) throw new CarrierError(0, 'no carrier account to answer with');
    await adapter.answerInbound(account, call, { connect: { streamUrl, params, callbackBase: `${base}/api/v1/telephony/calls/${callId}` } });
  } catch (err) {
    log.warn({ err, callId, carrier: adapter.id }, 'carrier answer failed');
    const gone = await ctx.calls.remove(callId);
    if (gone) await deps.voice.sessions.end(session.session_id).catch(() => {});
  }
  return docs.empty();
}

/**
 * A spoken step of an event carrier (refusal, hold round, the hang-up after a refusal), with a
 * deadline job for the step it starts. A failure is logged; on a call we already answered (the
 * carrier posted a step's end event) a transient one answers 503, so the carrier retries the event
 * (every command carries an id: a retry repeats nothing that went through), and the last step's
 * deadline still bounds the call if no retry gets through.
 */
async function eventStep(ctx: Ctx, adapter: CarrierAdapter, account: CarrierAccount, call: InboundCall, agent: LiveAgentConfig | undefined, a: InboundAction): Promise<void> {
  try {
    const pending = await adapter.answerInbound!(account, call, a);
    if (pending) await scheduleStepDeadline(ctx, adapter.id, call.callSid.trim(), agent?.agent_id ?? '', pending);
  } catch (err) {
    ctx.log.warn({ err, carrier: adapter.id, step: Object.keys(a)[0] }, 'carrier step of an inbound call failed');
    if (call.step && err instanceof CarrierError && (err.status === 0 || err.status === 429 || err.status >= 500)) {
      throw new AppError('SERVICE_UNAVAILABLE', 'the carrier could not be reached', { retryAfterS: 1 });
    }
  }
}

/** The live call an event carrier's event names, when that call is ours (connected after hold). */
async function liveCallOf(ctx: Ctx, adapter: CarrierAdapter, webhook: WebhookRequest): Promise<string | undefined> {
  for (const ev of adapter.parseEvents(webhook)) {
    const sid = 'callSid' in ev ? ev.callSid.trim() : '';
    if (sid && sid.length <= 256) return (await ctx.calls.bySid(sid))?.call_id;
  }
  return undefined;
}

/**
 * Seats: live calls of the agent's workspace, capped by the agent's metadata `max_concurrent_calls`
 * (a positive integer; absent or invalid: no cap). A full pool is swept for stale calls once.
 */
export function seatLimit(agent: LiveAgentConfig): number {
  const raw = (agent.metadata ?? {}).max_concurrent_calls;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof n === 'number' && Number.isInteger(n) && n > 0 ? n : 0;
}

export async function takeSeat(ctx: Ctx, rec: Parameters<Ctx['calls']['put']>[0], limit: number): Promise<boolean> {
  if (await ctx.calls.put(rec, limit)) return true;
  let freed = 0;
  for (const c of await ctx.calls.list({ poolId: rec.workspace_id })) if (await dropIfStale(ctx, c)) freed++;
  return freed > 0 && ctx.calls.put(rec, limit);
}

/** Starts the call's voice session; when it does not start, the call record (its seat) is given back and the error rethrown. */
export async function startCallSession(ctx: Ctx, req: StartRequest & { call_id: string }, signal?: AbortSignal): Promise<StartedSession> {
  try {
    return await ctx.deps.voice.startSession(req, signal);
  } catch (err) {
    await ctx.calls.remove(req.call_id);
    throw err;
  }
}

/** How hold round `round` sounds: the announcement on the first round, the agent's hold audio unless `pauseOnly`, else a pause. */
function holdRound(ctx: Ctx, agent: LiveAgentConfig, round: number, pauseOnly: boolean): HoldRound {
  const holdUrl = (agent.metadata ?? {}).hold_audio_url;
  ctx.log.info({ agentId: agent.agent_id, round }, 'no free voice seat: caller on hold');
  const usable = !pauseOnly && typeof holdUrl === 'string' && holdUrl.length <= MAX_HOLD_URL_CHARS && /^https?:\/\/\S+$/.test(holdUrl);
  return { announce: round === 0 ? MESSAGES.hold : undefined, holdAudioUrl: usable ? holdUrl : undefined, pauseS: ctx.opts.holdPauseS };
}

/** Longest hold audio URL handed to a carrier. */
const MAX_HOLD_URL_CHARS = 2048;

/** Twilio's route is `/calls/inbound`; every other carrier's `/calls/inbound/{carrier}`. */
function inboundPath(adapter: CarrierAdapter): string {
  return adapter.id === 'twilio' ? '/api/v1/telephony/calls/inbound' : `/api/v1/telephony/calls/inbound/${adapter.id}`;
}

/** Longest caller ID name kept (CNAM is 15 characters; a carrier's own lookups run longer). */
const MAX_CALLER_NAME_CHARS = 100;

/** `caller_name` for the session's metadata (and so `call.completed`): printable text, bounded. */
function callerNameOf(call: { callerName?: string }): { caller_name?: string } {
  // eslint-disable-next-line no-control-regex
  const clean = (call.callerName ?? '').replace(/[\u0000-\u001f\u007f]|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '').trim();
  const name = Array.from(clean).slice(0, MAX_CALLER_NAME_CHARS).join('');
  return name ? { caller_name: name } : {};
}
