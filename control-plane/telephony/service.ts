/**
 * `TelephonyService` implementation: maps proto messages onto the handlers (inbound.ts,
 * outbound.ts, manage.ts, callbacks.ts). The same object serves REST (routes.ts), Connect and gRPC.
 */
import { toJson } from '@bufbuild/protobuf';
import { ValueSchema } from '@bufbuild/protobuf/wkt';
import type { ServiceImpl } from '@connectrpc/connect';
import type { TelephonyService } from '../../shared/gen/voiceplane/v1/telephony_pb.js';
import { onAmd, onCarrierEvents, onDialComplete, onRecording, onStatus } from './callbacks.js';
import { capabilitiesView, providersView } from './carriers.js';
import { adapterOf, type Ctx, webhookOf } from './context.js';
import { answerInbound } from './inbound.js';
import { notFound } from '../../shared/errors.js';
import { endCall, getCall, listCalls, transferCall, type LiveCallView } from './manage.js';
import { placeOutbound } from './outbound.js';
import { pageOf } from '../http/pagination.js';

export function createTelephonyService(ctx: Ctx): ServiceImpl<typeof TelephonyService> {
  return {
    async inboundCall(req, hc) {
      const params = req.form?.params ?? {};
      const body = await answerInbound(ctx, hc, adapterOf(ctx, 'twilio')!, {
        hold: Math.max(0, req.hold),
        webhook: webhookOf(ctx, hc, new URLSearchParams(params).toString(), params),
      });
      return { body };
    },
    async carrierInbound(req, hc) {
      const adapter = adapterOf(ctx, req.carrier);
      // Twilio keeps its own route (/calls/inbound).
      if (!adapter || adapter.id === 'twilio') throw notFound('carrier');
      const body = await answerInbound(ctx, hc, adapter, { hold: Math.max(0, req.hold), webhook: carrierWebhook(ctx, hc, req.rawBody, req.contentType) });
      return { body, contentType: adapter.documents.contentType };
    },
    async carrierEvent(req, hc) {
      const adapter = adapterOf(ctx, req.carrier);
      if (!adapter) throw notFound('carrier');
      const body = await onCarrierEvents(ctx, hc, adapter, req.callId, carrierWebhook(ctx, hc, req.rawBody, req.contentType));
      return { body, contentType: adapter.documents.contentType };
    },
    async placeOutboundCall(req, hc) {
      const r = await placeOutbound(ctx, hc, {
        agent_id: req.agentId,
        to_number: req.toNumber,
        from_number: req.fromNumber,
        telephony_provider: req.telephonyProvider,
        dynamic_variables: req.dynamicVariables,
        context: req.context,
        user_background: req.userBackground,
        call_details: req.callDetails ? toJson(ValueSchema, req.callDetails) : undefined,
        system_message_override: req.systemMessageOverride,
        welcome_message_override: req.welcomeMessageOverride,
        session_metadata: req.sessionMetadata,
      });
      return {
        callId: r.call_id,
        sessionId: r.session_id,
        providerCallSid: r.provider_call_sid,
        telephonyProvider: r.telephony_provider,
        status: r.status,
        toNumber: r.to_number,
        fromNumber: r.from_number,
        agentId: r.agent_id,
      };
    },
    async listCalls(req, hc) {
      const r = await listCalls(ctx, hc, pageOf(req));
      return { count: r.count, calls: r.calls.map(toProto), meta: r.meta };
    },
    async getCall(req, hc) {
      return toProto(await getCall(ctx, hc, req.callId));
    },
    async endCall(req, hc) {
      const r = await endCall(ctx, hc, req.callId);
      return { callId: r.call_id, status: r.status, message: r.message };
    },
    async transferCall(req, hc) {
      const r = await transferCall(ctx, hc, req.callId, req.toNumber);
      return { callId: r.call_id, transferred: r.transferred, toNumber: r.to_number };
    },
    async callStatusCallback(req, hc) {
      return onStatus(ctx, hc, { callId: req.callId, callStatus: req.callStatus, callDuration: req.callDuration, callSid: req.callSid, sequenceNumber: req.sequenceNumber, params: req.form?.params ?? {} });
    },
    async recordingCallback(req, hc) {
      return onRecording(ctx, hc, { callId: req.callId, recordingUrl: req.recordingUrl, recordingSid: req.recordingSid, recordingStatus: req.recordingStatus, params: req.form?.params ?? {} });
    },
    async amdCallback(req, hc) {
      return onAmd(ctx, hc, { callId: req.callId, answeredBy: req.answeredBy, callSid: req.callSid, params: req.form?.params ?? {} });
    },
    async dialComplete(req, hc) {
      return { body: await onDialComplete(ctx, hc, { callId: req.callId, dialCallStatus: req.dialCallStatus, params: req.form?.params ?? {} }) };
    },
    listProviders() {
      return providersView(ctx.deps.carriers);
    },
    capabilities() {
      return capabilitiesView(ctx.deps.carriers);
    },
  };
}

/** The webhook with its form fields or JSON body parsed (bodies that are neither: no params). */
function carrierWebhook(ctx: Ctx, hc: Parameters<typeof webhookOf>[1], raw: string, contentType: string) {
  let json: unknown;
  const params: Record<string, string> = {};
  if (/json/i.test(contentType) || /^\s*[{[]/.test(raw)) {
    try {
      json = JSON.parse(raw);
    } catch {
      json = undefined;
    }
    if (json && typeof json === 'object' && !Array.isArray(json)) {
      for (const [k, v] of Object.entries(json)) if (typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean') params[k] = String(v);
    }
  } else {
    for (const [k, v] of new URLSearchParams(raw)) params[k] = v;
  }
  return webhookOf(ctx, hc, raw, params, json);
}

function toProto(v: LiveCallView) {
  return {
    callId: v.call_id,
    sessionId: v.session_id,
    agentId: v.agent_id,
    direction: v.direction,
    status: v.status,
    toNumber: v.to_number,
    fromNumber: v.from_number,
    telephonyProvider: v.telephony_provider,
    amdVerdict: v.amd_verdict,
    duration: v.duration,
    providerCallSid: v.provider_call_sid,
    createdAt: v.created_at,
    transferredTo: v.transferred_to,
    answeredBy: v.answered_by,
    recordingUrl: v.recording_url,
  };
}
