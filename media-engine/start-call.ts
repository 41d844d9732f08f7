/**
 * One way to start a call on this node, for browser and carrier sockets alike: choose the
 * providers (pre-warmed ones first), build the CallActor, register it, start it. What differs
 * per socket kind is the transport, the VAD profile, the carrier's ASR input and AMD policy, and
 * how a refusal reaches the far end (`CallSetup.refuse`).
 */
import { requestHandoff } from '../shared/voice/handoff.js';
import { maskSessionId } from '../shared/ids.js';
import { SOCKET_ERRORS } from '../shared/protocol/voice-socket.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import type { VadProfile } from './audio/vad.js';
import { atCapacity, type EngineContext } from './engine-context.js';
import { closeProviders, type CallProviders } from './prewarm.js';
import { createProviders } from '../shared/providers/registry.js';
import { CallActor } from './session/actor.js';
import { amdSettings } from '../shared/voice/amd.js';
import { CallTrace } from '../shared/observability/call-trace.js';
import type { CallTelemetry } from '../shared/observability/call-telemetry.js';
import type { TransportCounters } from '../shared/observability/engine-metrics.js';
import type { BrowserTransport } from './transports/browser.js';
import type { CarrierTransport } from './transports/carrier-transport.js';
import { MEDIA_ENDED_TOPIC } from '../shared/voice/media-ended.js';

export type CallSetup = (
  | { kind: 'browser'; transport: BrowserTransport; profile: VadProfile }
  | { kind: 'carrier'; transport: CarrierTransport }
) & {
  /** Refuses the socket with `message`; `code` names a provider error. */
  refuse(message: string, code?: string): void;
  /** The actor exists: the socket's data points at it before it starts. */
  bind(actor: CallActor): void;
  /** Call time the workspace's credit covers (credit-check.ts); absent: no limit. */
  allowanceMs?: number;
};

/** Starts the call of a claimed session, or refuses the socket (capacity, providers, a bug). */
export function startCall(ctx: EngineContext, sc: SessionConfig, setup: CallSetup): void {
  const { clock, logger, registry, calls, opts } = ctx;
  if (atCapacity(ctx, sc.session_id)) return setup.refuse(SOCKET_ERRORS.atCapacity);
  let providers: CallProviders;
  try {
    providers = providersFor(ctx, sc);
  } catch (err) {
    return setup.refuse((err as Error).message, (err as { code?: string }).code ?? 'PROVIDER_ERROR');
  }
  let telemetry: CallTelemetry | undefined;
  try {
    // Carrier calls: the ASR takes the raw mu-law when it can, and outbound calls may detect machines.
    const carrier = setup.kind === 'carrier' ? setup.transport : undefined;
    const mulaw = carrier !== undefined && carrier.rawIsMulaw && providers.asr.capabilities.acceptsMulaw;
    // Otherwise PCM at the call's native rate when the ASR takes it (no resampling on the way in).
    const pcmRateHz = carrier && providers.asr.capabilities.sampleRatesHz.includes(carrier.inRateHz) ? carrier.inRateHz : 16000;
    telemetry = callTelemetry(ctx, sc, setup, providers);
    const carrierCallId = carrier && sc.call_id ? sc.call_id : undefined;
    const connectedAtMs = clock.monotonicMs();
    const actor = new CallActor({
      config: sc,
      transport: setup.transport,
      providers,
      profile: setup.kind === 'browser' ? setup.profile : 'telephony',
      clock,
      logger,
      recorder: opts.recorderFactory?.(sc, ctx.nodeId),
      outbound: ctx.outbound,
      connectors: ctx.connectors,
      knowledge: opts.knowledge,
      telemetry,
      allowanceMs: setup.allowanceMs,
      // Portal hand-off (issue 21): every control plane hears it; one job per call offers it (docs/portal.md).
      // A notice lost with Redis is stored in Postgres for the control plane's sweep (shared/voice/handoff.ts).
      requestHandoff: sc.human_handoff && sc.call_id ? () => void requestHandoff({ bus: registry.invalidations, sql: opts.sql, logger }, sc.call_id!) : undefined,
      ...(carrier
        ? {
            asrInput: mulaw ? { encoding: 'mulaw', sampleRateHz: 8000 } : { encoding: 'linear16', sampleRateHz: pcmRateHz },
            amd: sc.call_direction === 'outbound' ? amdSettings(sc.agent_metadata) : undefined,
            transportStats: () => carrier.stats(),
          }
        : {}),
      onClosed: (reason) => {
        // One line per call end, with the reason: the operator's answer to "why did it hang up".
        logger.info({ session: maskSessionId(sc.session_id), agent: sc.agent_id, transport: setup.kind, reason, durationMs: Math.round(clock.monotonicMs() - connectedAtMs) }, 'call ended');
        closeProviders(providers);
        calls.delete(sc.session_id);
        void registry.sessions.deleteSession(sc.session_id).catch(() => {});
        if (carrierCallId) {
          registry.calls.releaseCall(carrierCallId);
          // When the media ended: a record dropped as stale before the carrier's final callback
          // (which names the duration) still gets the call's length from it.
          void registry.calls
            .patchCall(carrierCallId, { media_ended_at_ms: clock.now() })
            .then(() => registry.invalidations.publish(MEDIA_ENDED_TOPIC, carrierCallId))
            .catch(() => {});
        }
      },
    });
    setup.bind(actor);
    calls.set(sc.session_id, actor);
    // The live call's record is written back by this node too after Redis comes back empty, while
    // it carries the call: the control plane that placed it may have been replaced since (issue 23).
    if (carrierCallId) {
      void registry.calls.adoptCall(carrierCallId).catch((err: Error) => logger.warn({ err, session: maskSessionId(sc.session_id) }, 'live call record not adopted'));
      // The media reached us: the call was answered, whatever becomes of the carrier's own
      // "answered" callback (a stale record is then ended as connected, not as no-answer).
      void registry.calls.patchCall(carrierCallId, { media_connected_at_ms: clock.now() }).catch((err: Error) => logger.warn({ err, session: maskSessionId(sc.session_id) }, 'live call record not marked connected'));
    }
    logger.info(
      { session: maskSessionId(sc.session_id), agent: sc.agent_id, transport: setup.kind, providers: { asr: providers.asr.label, llm: providers.llm.label, tts: providers.tts.label } },
      'call socket connected',
    );
    actor.start();
    carrier?.attach(actor, { passRawMulaw: mulaw });
  } catch (err) {
    logger.error({ err }, setup.kind === 'browser' ? 'call start failed' : 'carrier call start failed');
    telemetry?.end('error');
    setup.refuse('internal error');
  }
}

function providersFor(ctx: EngineContext, c: SessionConfig): CallProviders {
  const { opts, clock, outbound } = ctx;
  if (opts.providerFactory) return opts.providerFactory(c);
  return ctx.prewarmed.take(c.session_id) ?? createProviders(c.providers, { clock, language: c.language, outbound });
}

/** The call's metrics (scraped from its transport counters) and, when tracing is on, its trace. */
function callTelemetry(ctx: EngineContext, sc: SessionConfig, setup: CallSetup, providers: CallProviders): CallTelemetry {
  const vendors = { asr: providers.asr.label, llm: providers.llm.label, tts: providers.tts.label };
  const transport = setup.kind === 'browser' ? 'browser' : 'twilio';
  const trace = ctx.tracer
    ? new CallTrace(ctx.tracer, ctx.clock, { sessionId: sc.session_id, agentId: sc.agent_id, workspaceId: sc.workspace_id, transport, vendors })
    : undefined;
  return ctx.metrics.callStarted({ transport, counters: transportCounters(setup), vendors, trace });
}

/** Read at scrape time and once at the call's end, never per frame. */
function transportCounters(setup: CallSetup): () => TransportCounters {
  if (setup.kind === 'browser') {
    const t = setup.transport;
    return () => ({ lateIn: 0, droppedIn: t.droppedInMessages, droppedOut: t.droppedFrames });
  }
  const t = setup.transport;
  return () => {
    const s = t.stats();
    return { lateIn: s.jitter.late, droppedIn: s.jitter.overflow + s.jitter.trimmed + s.invalidFrames, droppedOut: s.outFramesDropped, jitterDepthMs: s.jitter.depthMs };
  };
}
