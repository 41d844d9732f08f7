/**
 * `POST /telephony/calls/outbound` (spec "Outbound request" and rules 1-5): validate, check the
 * agent (caller's workspace, direction, number, credentials, carrier), take a seat, start the voice
 * session (its 4xx propagate), then dial through the carrier's REST API with inline TwiML that
 * connects the answered call to the engine node holding the session. Status, recording and async
 * AMD callbacks point back at `/telephony/calls/{call_id}/...`.
 */
import type { HandlerContext } from '@connectrpc/connect';
import { AppError, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { amdSettings } from '../../shared/voice/amd.js';
import type { StartRequest } from '../voice/index.js';
import { inactiveAgentError } from '../voice/agent-view.js';
import { requireE164 } from '../agents/telephony/phone.js';
import { CARRIERS, CarrierError, isCarrierName, type CarrierName } from './carriers/index.js';
import { type Ctx, emit, maskNumber, publicBase, resolveAccount } from './context.js';
import { seatLimit, startCallSession, takeSeat } from './inbound.js';
import { newCallRecord } from './live-calls.js';

export interface OutboundInput {
  agent_id: string;
  to_number: string;
  from_number: string;
  telephony_provider: string;
  dynamic_variables?: Record<string, unknown>;
  context: string;
  user_background: string;
  call_details?: unknown;
  system_message_override: string;
  welcome_message_override: string;
  session_metadata?: Record<string, unknown>;
}

export interface OutboundResult {
  call_id: string;
  session_id: string;
  provider_call_sid: string;
  telephony_provider: string;
  status: 'initiated';
  to_number: string;
  from_number: string;
  agent_id: string;
}

/** Who places a call and from where its callbacks come back (the route: the request's caller). */
export interface DialAs {
  userId: string;
  /** Whether the caller may use an agent of this workspace (no: 404 agent). */
  mayUse(workspaceId: string): Promise<boolean>;
  /** Base URL the carrier's callbacks reach this service at. */
  publicBase: string;
  signal?: AbortSignal;
  /** The call id to use (campaigns choose it before dialing so early callbacks find their contact). Default: a new id. */
  callId?: string;
  /** Stored on the live call record (campaigns count their live calls by it). */
  campaignId?: string;
}

export async function placeOutbound(ctx: Ctx, hc: HandlerContext, req: OutboundInput): Promise<OutboundResult> {
  const principal = await ctx.deps.auth.principal(hc);
  return dialOutbound(ctx, req, {
    userId: principal.userId,
    mayUse: async (ws) => (await ctx.deps.auth.roleIn(principal, ws)) !== undefined,
    publicBase: publicBase(ctx, hc),
    signal: hc.signal,
  });
}

/**
 * The outbound dial path itself, shared by the route and the campaign dialer: validation, seat,
 * session start, carrier create call. Errors are the route's (400, 404, 502, 503 with Retry-After).
 */
export async function dialOutbound(ctx: Ctx, req: OutboundInput, as: DialAs): Promise<OutboundResult> {
  const { deps, log } = ctx;
  const agentId = req.agent_id.trim();
  if (!agentId) throw invalid('agent_id', 'is required');
  if (!req.to_number.trim()) throw invalid('to_number', 'is required');
  const to = requireE164('to_number', req.to_number);
  const requested = req.telephony_provider.trim().toLowerCase();
  if (requested && !isCarrierName(requested)) throw invalid('telephony_provider', `must be one of ${CARRIERS.join(', ')}`);

  const live = await deps.liveConfig(agentId, as.signal);
  if (!(await as.mayUse(live.workspace_id))) throw notFound('agent');
  if (live.is_active === false) throw inactiveAgentError(live.agent_id);
  const binding = live.telephony;
  if ((binding?.call_direction ?? 'both') === 'inbound') throw invalid('agent_id', "the agent's call_direction is inbound: it places no outbound calls");
  const from = req.from_number.trim() ? requireE164('from_number', req.from_number) : (binding?.carrier_phone_number ?? '');
  if (!from) throw invalid('from_number', 'is required when the agent has no carrier phone number attached');
  if (requested && !deps.carriers.has(requested as CarrierName)) {
    throw invalid('telephony_provider', `${requested} is not supported yet (supported: ${[...deps.carriers.keys()].join(', ')})`);
  }
  // Omitted: the carrier of the resolved credentials (binding, workspace account, environment).
  const account = await resolveAccount(ctx, live, (requested || undefined) as CarrierName | undefined, as.signal);
  const provider = requested || account?.carrier || 'twilio';
  const adapter = deps.carriers.get(provider as CarrierName);
  if (!adapter) throw invalid('telephony_provider', `${provider} is not supported yet (supported: ${[...deps.carriers.keys()].join(', ')})`);
  if (!account) throw new AppError('SERVICE_UNAVAILABLE', 'no usable carrier credentials for this agent', { retryAfterS: 30 });

  const callId = as.callId ?? newId();
  const now = deps.clock.now();
  const rec = newCallRecord({
    call_id: callId,
    agent_id: live.agent_id,
    workspace_id: live.workspace_id,
    user_id: as.userId,
    direction: 'outbound',
    status: 'initiated',
    to_number: to,
    from_number: from,
    telephony_provider: provider,
    created_at_ms: now,
    campaign_id: as.campaignId ?? '',
  });
  if (!(await takeSeat(ctx, rec, seatLimit(live)))) {
    throw new AppError('SERVICE_UNAVAILABLE', 'voice capacity exhausted: no free seat in the workspace', { retryAfterS: 5 });
  }

  const session = await startCallSession(
    ctx,
    {
      agent_id: live.agent_id,
      user_id: as.userId,
      call_id: callId,
      call_direction: 'outbound',
      connection_type: provider,
      telephony_provider: provider,
      dynamic_variables: req.dynamic_variables,
      context: req.context,
      user_background: req.user_background,
      call_details: req.call_details,
      system_message_override: req.system_message_override,
      welcome_message_override: req.welcome_message_override,
      session_metadata: { ...(req.session_metadata ?? {}), to_number: to, from_number: from, call_started_at: new Date(now).toISOString() },
      from_number: from,
      to_number: to,
    } satisfies StartRequest,
    as.signal,
  );
  await extendAnswerWindow(ctx, session.session_id, now + ctx.opts.carrierQueueAllowanceMs);
  await ctx.calls.patch(callId, { session_id: session.session_id });

  const callbacks = `${as.publicBase}/api/v1/telephony/calls/${callId}`;
  const amd = amdSettings(live.metadata);
  let created;
  try {
    // No client abort here: once the carrier may have placed the call, a client that hangs up
    // must not make us drop it (a phone would ring with no agent). The carrier client has its own timeout.
    created = await adapter.dial(account, {
      callId,
      to,
      from,
      streamUrl: `${session.node_ws_url}/api/v1/voice/ws/${adapter.id}/${callId}`,
      streamParams: { session_id: session.session_id, agent_id: live.agent_id, call_id: callId },
      callbackBase: callbacks,
      ringTimeoutS: ctx.opts.ringTimeoutS,
      amd: amd ? { waitForBeep: amd.policy === 'leave_voicemail', timeoutS: Math.round(amd.verdictTimeoutMs / 1000) } : undefined,
      record: truthy((live.metadata ?? {}).record_calls),
    });
  } catch (err) {
    // The carrier's answer decides what the caller (or the campaign dialer) does next: a registry
    // blip while cleaning up must not replace it (a 503 there would be dialed again at once,
    // although the carrier may have placed the call).
    await ctx.calls.remove(callId).catch((e: Error) => log.warn({ callId, err: e.message }, 'failed dial: its live call record not removed (the stale sweep removes it)'));
    await deps.voice.sessions.end(session.session_id).catch(() => {});
    throw carrierFailure(err, 'the call may have been placed');
  }
  // The call is placed: a registry blip now must not answer an error (a caller, or the campaign
  // dialer, would dial again and ring the callee twice). The carrier's first status callback
  // stores the sid then (callbacks.ts onStatus, onCarrierEvents).
  try {
    const saved = await ctx.calls.patch(callId, { provider_call_sid: created.sid });
    if (saved) emit(ctx, { type: 'status', call: saved, detail: 'initiated' });
  } catch (err) {
    log.warn({ callId, err: (err as Error).message }, 'outbound call placed; its carrier sid not stored yet (its first callback stores it)');
  }
  log.info({ callId, agentId: live.agent_id, to: maskNumber(to), amd: amd?.policy ?? 'off', carrier: provider }, 'outbound call placed');
  return {
    call_id: callId,
    session_id: session.session_id,
    provider_call_sid: created.sid,
    telephony_provider: provider,
    status: 'initiated',
    to_number: to,
    from_number: from,
    agent_id: live.agent_id,
  };
}

/**
 * The callee may take longer to answer than the 30 s a browser session gets to connect: the
 * session waits for the stream the ring timeout plus a margin from `fromMs` (the placement plus the
 * carrier queue allowance, then the carrier's `ringing` or answer). Never shortened; a session
 * ended or claimed meanwhile is left alone.
 */
export async function extendAnswerWindow(ctx: Ctx, sessionId: string, fromMs: number): Promise<void> {
  if (!sessionId) return;
  await ctx.deps.registry.sessions.extendConnectDeadline(sessionId, fromMs + ctx.opts.ringTimeoutS * 1000 + ctx.opts.answerMarginMs);
}

/**
 * Carrier refusals are 502 (with the carrier's code); an unreachable carrier, or one answering 429
 * or 503, is 503 with `Retry-After` (retry with backoff). A
 * create the carrier may have carried out without telling us (no answer in time) is a 502 that
 * says so: retrying it could ring the callee twice.
 */
export function carrierFailure(err: unknown, unknownOutcome = 'the carrier may have carried it out'): AppError {
  if (err instanceof CarrierError) {
    if (err.status === 0 && err.outcomeUnknown) return new AppError('BAD_GATEWAY', `${err.message}: ${unknownOutcome}, so it is not retried automatically`, { cause: err });
    if (err.status === 0) return new AppError('SERVICE_UNAVAILABLE', err.message, { retryAfterS: 5, cause: err });
    // Rate limited or unavailable: the carrier did nothing and says to come back (not a refusal).
    if (err.status === 429 || err.status === 503) return new AppError('SERVICE_UNAVAILABLE', `the carrier is busy (HTTP ${err.status}): ${err.message}`, { retryAfterS: 5, cause: err });
    const code = err.carrierCode ? ` (carrier error ${err.carrierCode})` : '';
    return new AppError('BAD_GATEWAY', `the carrier rejected the request: ${err.message}${code}`, { cause: err });
  }
  return err instanceof AppError ? err : new AppError('INTERNAL', 'carrier request failed', { cause: err });
}

function truthy(v: unknown): boolean {
  return v === true || (typeof v === 'string' && /^(true|1|yes|on)$/i.test(v.trim()));
}
