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
import { createCarrierAdapters } from './carriers/index.js';
import type { LiveCalls } from './live-calls.js';
import { dialOutbound, type DialAs, type OutboundInput, type OutboundResult } from './outbound.js';
import { endLostCall } from './manage.js';

export type { TelephonyDeps, TelephonyOptions } from './context.js';
export type { CallEvent, CallRecord } from './live-calls.js';
export type { DialAs, OutboundInput, OutboundResult } from './outbound.js';
export { computeSignature, verifySignature } from './signature.js';

export interface TelephonyDomain extends Domain {
  calls: LiveCalls;
  /** The outbound dial path of `POST /telephony/calls/outbound`, for callers without a request (campaigns). */
  dial(req: OutboundInput, as: DialAs): Promise<OutboundResult>;
  /** Ends a live call whose engine node is gone (carrier hangup, seat freed, `ended` event once); false: not live. */
  endLostCall(callId: string, reason: string): Promise<boolean>;
}

export function createTelephonyDomain(deps: Omit<TelephonyDeps, 'carriers'> & Partial<Pick<TelephonyDeps, 'carriers'>>): TelephonyDomain {
  const ctx = createCtx({ ...deps, carriers: deps.carriers ?? createCarrierAdapters(() => deps.config) });
  let closed = false;
  return {
    services: [{ service: TelephonyService, impl: createTelephonyService(ctx) }] as ServiceBinding[],
    routes: telephonyRoutes,
    calls: ctx.calls,
    dial: (req, as) => dialOutbound(ctx, req, as),
    endLostCall: (callId, reason) => endLostCall(ctx, callId, reason),
    async close() {
      if (closed) return;
      closed = true;
      await Promise.allSettled([...ctx.background]);
    },
  };
}
