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
 */
import type { HandlerContext } from '@connectrpc/connect';
import { AppError } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import type { LiveAgentConfig } from '../agents/index.js';
import type { StartedSession, StartRequest } from '../voice/index.js';
import { toE164 } from '../agents/telephony/phone.js';
import type { CarrierAdapter, WebhookRequest } from './carriers/index.js';
import { type Ctx, emit, maskNumber, publicBase, resolveAccount, verifyWebhook } from './context.js';
import { newCallRecord } from './live-calls.js';

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
  const to = toE164(call?.to ?? '');
  const agent = to ? await deps.findAgentByNumber(to, hc.signal) : undefined;
  const account = await resolveAccount(ctx, agent, adapter.id, hc.signal);
  verifyWebhook(ctx, hc, adapter, req.webhook, account);
  if (!call) return docs.empty();
  const base = publicBase(ctx, hc);
  const callSid = call.callSid.trim();
  // Event carriers act by REST on the call: with no account there is nothing to act with.
  const act = adapter.answerInbound && account ? (a: Parameters<NonNullable<CarrierAdapter['answerInbound']>>[2]) => adapter.answerInbound!(account, callSid, a) : undefined;
  const refuse = async (text: string): Promise<string> => {
    if (!adapter.answerInbound) return docs.sayAndHangup(text);
    await act?.({ sayAndHangup: text }).catch((err: unknown) => log.warn({ err, carrier: adapter.id }, 'carrier refusal failed'));
    return docs.empty();
  };
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
    return docs.connect(existing.stream_url, { session_id: existing.session_id, agent_id: existing.agent_id, call_id: existing.call_id });
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
  // Hold is a document loop (<Redirect> back here): event carriers get a refusal instead.
  const hold = () => (adapter.answerInbound ? refuse(MESSAGES.unavailable) : holdDocument(ctx, adapter, base, req.hold, agent));
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
        connection_type: 'twilio',
        telephony_provider: adapter.id,
        session_metadata: { from_number: rec.from_number, to_number: rec.to_number, provider_call_sid: callSid },
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
  log.info({ callId, agentId: agent.agent_id, nodeId: session.node_id, from: maskNumber(rec.from_number), carrier: adapter.id }, 'inbound call connected to the engine');
  if (!act) return docs.connect(streamUrl, params);
  try {
    await act({ connect: { streamUrl, params, callbackBase: `${base}/api/v1/telephony/calls/${callId}` } });
  } catch (err) {
    log.warn({ err, callId, carrier: adapter.id }, 'carrier answer failed');
    const gone = await ctx.calls.remove(callId);
    if (gone) await deps.voice.sessions.end(session.session_id).catch(() => {});
  }
  return docs.empty();
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
  for (const c of await ctx.calls.list({ poolId: rec.workspace_id })) {
    if (await ctx.calls.isStale(c)) {
      const gone = await ctx.calls.remove(c.call_id);
      if (gone) {
        freed++;
        emit(ctx, { type: 'ended', call: gone, detail: 'session_ended' });
      }
    }
  }
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

function holdDocument(ctx: Ctx, adapter: CarrierAdapter, base: string, round: number, agent: LiveAgentConfig): string {
  if (round >= ctx.opts.maxHoldRounds) return adapter.documents.sayAndHangup(MESSAGES.holdTimeout);
  const holdUrl = (agent.metadata ?? {}).hold_audio_url;
  ctx.log.info({ agentId: agent.agent_id, round }, 'no free voice seat: caller on hold');
  // Twilio's route is `/calls/inbound`; every other carrier's `/calls/inbound/{carrier}`.
  const path = adapter.id === 'twilio' ? '/api/v1/telephony/calls/inbound' : `/api/v1/telephony/calls/inbound/${adapter.id}`;
  return adapter.documents.hold({
    announce: round === 0 ? MESSAGES.hold : undefined,
    holdAudioUrl: typeof holdUrl === 'string' && /^https?:\/\//.test(holdUrl) ? holdUrl : undefined,
    pauseS: ctx.opts.holdPauseS,
    redirectUrl: `${base}${path}?hold=${round + 1}`,
  });
}
