/**
 * `POST /telephony/calls/inbound`: the carrier's voice webhook (spec "Inbound behaviour").
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
import { type Ctx, emit, maskNumber, publicBase, resolveAccount, verifyWebhook } from './context.js';
import { newCallRecord } from './live-calls.js';
import * as twiml from './twiml.js';

export const MESSAGES = {
  notInService: 'Sorry, the number you have called is not in service. Goodbye.',
  noInbound: 'Sorry, this number does not take incoming calls. Goodbye.',
  unavailable: 'Sorry, we cannot take your call right now. Please try again later. Goodbye.',
  hold: 'All of our agents are busy right now. Please hold and we will be with you shortly.',
  holdTimeout: 'Sorry, all of our agents are still busy. Please call again later. Goodbye.',
} as const;

export interface InboundInput {
  callSid: string;
  from: string;
  to: string;
  accountSid: string;
  hold: number;
  params: Record<string, string>;
}

export async function answerInbound(ctx: Ctx, hc: HandlerContext, req: InboundInput): Promise<string> {
  const { deps, log } = ctx;
  const to = toE164(req.to ?? '');
  const agent = to ? await deps.findAgentByNumber(to, hc.signal) : undefined;
  verifyWebhook(ctx, hc, req.params, resolveAccount(ctx, agent)?.authToken ?? deps.config.twilioAuthToken);
  const base = publicBase(ctx, hc);
  const callSid = req.callSid.trim();
  if (!agent || !callSid) {
    log.info({ to: maskNumber(to ?? ''), hasSid: Boolean(callSid) }, 'inbound call to an unbound number refused');
    return twiml.sayAndHangup(MESSAGES.notInService);
  }
  const binding = agent.telephony;
  if (binding?.carrier_account_sid && req.accountSid && binding.carrier_account_sid !== req.accountSid) {
    log.warn({ agentId: agent.agent_id }, 'inbound call from another carrier account refused');
    return twiml.sayAndHangup(MESSAGES.notInService);
  }
  if ((binding?.call_direction ?? 'both') === 'outbound') {
    log.info({ agentId: agent.agent_id }, 'inbound call refused: agent is outbound only');
    return twiml.sayAndHangup(MESSAGES.noInbound);
  }

  // The carrier retried the webhook, or the caller comes back from hold after we already placed it.
  const existing = await ctx.calls.bySid(callSid);
  if (existing?.stream_url) return connectTwiml(existing.stream_url, existing.session_id, existing.agent_id, existing.call_id);

  const callId = newId();
  const rec = newCallRecord({
    call_id: callId,
    agent_id: agent.agent_id,
    workspace_id: agent.workspace_id,
    user_id: agent.user_id,
    direction: 'inbound',
    status: 'in_progress',
    to_number: to!,
    from_number: toE164(req.from ?? '') ?? req.from ?? '',
    telephony_provider: 'twilio',
    provider_call_sid: callSid,
    created_at_ms: deps.clock.now(),
    answered_at_ms: deps.clock.now(),
  });
  const limit = seatLimit(agent);
  if (!(await takeSeat(ctx, rec, limit))) return holdTwiml(ctx, base, req.hold, agent);

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
        telephony_provider: 'twilio',
        session_metadata: { from_number: rec.from_number, to_number: rec.to_number, provider_call_sid: callSid },
        from_number: rec.from_number,
        to_number: rec.to_number,
      },
      hc.signal,
    );
  } catch (err) {
    // No engine capacity is a seat shortage too: hold rather than refuse.
    if (err instanceof AppError && err.code === 'SERVICE_UNAVAILABLE') return holdTwiml(ctx, base, req.hold, agent);
    log.warn({ agentId: agent.agent_id, err, code: (err as AppError).code }, 'inbound call could not start a voice session');
    return twiml.sayAndHangup(MESSAGES.unavailable);
  }
  // The path names the carrier's CallSid; the engine trusts only the `start` frame's parameters.
  const streamUrl = `${session.node_ws_url}/api/v1/voice/ws/twilio/${encodeURIComponent(callSid)}`;
  const saved = await ctx.calls.patch(callId, { session_id: session.session_id, stream_url: streamUrl });
  if (saved) emit(ctx, { type: 'status', call: saved, detail: 'in_progress' });
  log.info({ callId, agentId: agent.agent_id, nodeId: session.node_id, from: maskNumber(rec.from_number) }, 'inbound call connected to the engine');
  return connectTwiml(streamUrl, session.session_id, agent.agent_id, callId);
}

function connectTwiml(streamUrl: string, sessionId: string, agentId: string, callId: string): string {
  return twiml.connectStream(streamUrl, { session_id: sessionId, agent_id: agentId, call_id: callId });
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

function holdTwiml(ctx: Ctx, base: string, round: number, agent: LiveAgentConfig): string {
  if (round >= ctx.opts.maxHoldRounds) return twiml.sayAndHangup(MESSAGES.holdTimeout);
  const holdUrl = (agent.metadata ?? {}).hold_audio_url;
  ctx.log.info({ agentId: agent.agent_id, round }, 'no free voice seat: caller on hold');
  return twiml.hold({
    announce: round === 0 ? MESSAGES.hold : undefined,
    holdAudioUrl: typeof holdUrl === 'string' && /^https?:\/\//.test(holdUrl) ? holdUrl : undefined,
    pauseS: ctx.opts.holdPauseS,
    redirectUrl: `${base}/api/v1/telephony/calls/inbound?hold=${round + 1}`,
  });
}
