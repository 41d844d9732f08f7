/**
 * The telephony domain (issue 7): carrier numbers answer calls (inbound webhook -> TwiML), the
 * service places outbound calls through the carrier's REST API, and live calls are kept in the
 * shared registry for list / get / end / transfer from any replica. Media flows between the carrier
 * and an engine node (`media-engine/transports/<carrier>.ts`); this domain never touches audio.
 * Carriers are adapters (carriers/types.ts).
 * See docs/telephony.md and NOTES.md.
 */
import { TelephonyService } from '../../shared/gen/voiceplane/v1/telephony_pb.js';
import type { ServiceBinding } from '../http/server.js';
import type { Domain } from '../domain.js';
import { createCtx, type TelephonyDeps } from './context.js';
import { telephonyRoutes } from './routes.js';
import { createTelephonyService } from './service.js';
import { createCarrierAdapters, type CarrierName } from './carriers/index.js';
import type { LiveCalls } from './live-calls.js';
import { dialOutbound, type DialAs, type OutboundInput, type OutboundResult } from './outbound.js';
import { dialClient, endLostCall, handOffRefusal } from './manage.js';
import { fetchRecording, type RecordingRef } from './recordings.js';
import { runStepDeadline, type StepDeadline } from './inbound-deadline.js';
import { carrierHangup, endIfStale } from './stale.js';
import { reconcileWithCarrier } from './callbacks.js';

export type { LateRecordings, TelephonyDeps, TelephonyOptions } from './context.js';
export type { CarrierName, CarrierRecording } from './carriers/index.js';
export type { CallEvent, CallRecord } from './live-calls.js';
export type { DialAs, OutboundInput, OutboundResult } from './outbound.js';
export { computeSignature, verifySignature } from './signature.js';
export { RecordingFetchError, type RecordingRef } from './recordings.js';

export interface TelephonyDomain extends Domain {
  calls: LiveCalls;
  /** The outbound dial path of `POST /telephony/calls/outbound`, for callers without a request (campaigns). */
  dial(req: OutboundInput, as: DialAs): Promise<OutboundResult>;
  /** Ends a live call whose voice session is gone and that nobody ended (stale.ts `dropIfStale`); false: not stale or not live. */
  endIfStale(callId: string): Promise<boolean>;
  /**
   * Asks the carrier about a placed call not connected yet whose end was not heard of, and applies
   * what it says (callbacks.ts `reconcileWithCarrier`). At most once per `carrierRecheckMs` per call.
   */
  reconcileWithCarrier(callId: string): Promise<'ended' | 'asked' | 'not_asked'>;
  /** Ends a live call whose engine node is gone (carrier hangup, seat freed, `ended` event once); false: not live. */
  endLostCall(callId: string, reason: string): Promise<boolean>;
  /**
   * Hand-off to a portal agent: the carrier dials person `identity`, the AI drops off (issue 21).
   * `base`: carrier callback base URL. The carrier that dialed, undefined when it could not.
   */
  dialClient(callId: string, identity: string, base: string): Promise<CarrierName | undefined>;
  /** Downloads a recording a carrier callback named, with the agent's carrier account (RecordingFetchError says if a retry can help). */
  fetchRecording(ref: RecordingRef, signal?: AbortSignal): Promise<Uint8Array>;
  /** Why the call's carrier (or account) cannot hand it to a person; undefined when it can. */
  handOffRefusal(callId: string): Promise<string | undefined>;
  /** Hangs a live call up at its carrier (a person ended a call handed to them); its `ended` event follows the carrier's final status. False: not live. */
  hangUp(callId: string): Promise<boolean>;
  /** The `telephony.step-deadline` job: hangs up an inbound call whose spoken step never ended (inbound-deadline.ts). */
  runStepDeadline(data: StepDeadline): Promise<'hung_up' | 'moved_on'>;
}

export function createTelephonyDomain(deps: Omit<TelephonyDeps, 'carriers'> & Partial<Pick<TelephonyDeps, 'carriers'>>): TelephonyDomain {
  const ctx = createCtx({ ...deps, carriers: deps.carriers ?? createCarrierAdapters(() => deps.config) });
  let closed = false;
  return {
    services: [{ service: TelephonyService, impl: createTelephonyService(ctx) }] as ServiceBinding[],
    routes: telephonyRoutes,
    calls: ctx.calls,
    dial: (req, as) => dialOutbound(ctx, req, as),
    endIfStale: (callId) => endIfStale(ctx, callId),
    reconcileWithCarrier: (callId) => reconcileWithCarrier(ctx, callId),
    endLostCall: (callId, reason) => endLostCall(ctx, callId, reason),
    async hangUp(callId) {
      const c = await ctx.calls.get(callId);
      if (!c) return false;
      await carrierHangup(ctx, c, 'carrier hangup of a call a person ended failed');
      return true;
    },
    dialClient: (callId, identity, base) => dialClient(ctx, callId, identity, base),
    fetchRecording: (ref, signal) => fetchRecording(ctx, ref, signal),
    handOffRefusal: (callId) => handOffRefusal(ctx, callId),
    runStepDeadline: (data) => runStepDeadline(ctx, data),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...ctx.background]);
    },
  };
}
