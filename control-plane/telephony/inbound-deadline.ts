/**
 * The bounded fallback of event carriers' spoken steps (issue 24). A refusal or a hold round on
 * Telnyx is a command whose end event takes the next step (hang up, try for a seat again). Telnyx
 * retries that event when we answer an error, but if it never gets through (our control plane
 * unreachable for longer than its retries, the event lost), the caller would sit on an answered,
 * silent line until they hang up. So every step also queues a durable deadline job (pg-boss: it
 * survives a restart of this process), due at the step's longest play plus `stepGraceS`; it hangs
 * the call up when the carrier still holds that step's state (`callState`): the step never moved
 * on. A call that went on (a later step, the stream started) holds another state and is left alone.
 */
import { AppError } from '../../shared/errors.js';
import type { JobPayloads } from '../jobs/index.js';
import { CarrierError, type CarrierName, type PendingStep } from './carriers/index.js';
import { adapterOf, type Ctx, resolveAccount } from './context.js';

/**
 * How long a hold round playing the agent's hold audio may last before its deadline: the file's
 * length is unknown to us, so this bounds it (a hold file playing longer than 15 minutes at once
 * would be hung up on).
 */
export const HOLD_AUDIO_BOUND_S = 900;
/** Longest carrier state a job carries (Telnyx's ours: under 200 characters). */
const MAX_STATE_CHARS = 1024;

export type StepDeadline = JobPayloads['telephony.step-deadline'];

/** Queues the deadline of `step` (without a job queue: none, the carrier's event retries only). */
export async function scheduleStepDeadline(ctx: Ctx, carrier: CarrierName, callSid: string, agentId: string, step: PendingStep): Promise<void> {
  const jobs = ctx.deps.jobs;
  if (!jobs || !callSid || step.state.length > MAX_STATE_CHARS) return;
  const dueS = (step.playS ?? HOLD_AUDIO_BOUND_S) + ctx.opts.stepGraceS;
  const data: StepDeadline = { carrier, call_sid: callSid, agent_id: agentId, state: step.state };
  // One job per step: a duplicated event queues nothing more.
  await jobs.enqueue('telephony.step-deadline', data, { singletonKey: `${carrier}:${callSid}:${step.state}`, startAfter: new Date(ctx.deps.clock.now() + dueS * 1000) });
}

/**
 * The deadline of one step: hangs the call up if the carrier still holds the step's state. A
 * carrier that is unreachable throws (the job is retried); a call the carrier no longer has, or
 * that ended meanwhile (4xx on the hang-up), is done.
 */
export async function runStepDeadline(ctx: Ctx, data: StepDeadline): Promise<'hung_up' | 'moved_on'> {
  const adapter = adapterOf(ctx, data.carrier);
  if (!adapter?.callState) return 'moved_on';
  const agent = data.agent_id ? await ctx.deps.liveConfig(data.agent_id).catch(() => undefined) : undefined;
  const account = await resolveAccount(ctx, agent, adapter.id);
  if (!account) return 'moved_on';
  const now = await adapter.callState(account, data.call_sid);
  if (!now?.alive || now.state !== data.state) return 'moved_on';
  ctx.log.warn({ carrier: adapter.id, agentId: data.agent_id || undefined }, 'inbound call step never ended (its event did not get through): hanging up');
  try {
    await adapter.hangup(account, data.call_sid);
  } catch (err) {
    // Ended meanwhile (Telnyx: 422 "call has already ended").
    if (err instanceof CarrierError && err.status >= 400 && err.status < 500 && err.status !== 429) return 'moved_on';
    throw err instanceof AppError ? err : new AppError('SERVICE_UNAVAILABLE', 'carrier hang-up failed', { cause: err });
  }
  return 'hung_up';
}
