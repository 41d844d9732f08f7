/**
 * Builds the control plane from its domains and serves it on one port. `main.ts` and the
 * integration tests both go through here, so tests exercise the real wiring.
 */
import { HealthService } from '../shared/gen/voiceplane/v1/health_pb.js';
import { createHealthService } from './health/service.js';
import { healthRoutes } from './health/routes.js';
import { createCors } from './http/cors.js';
import { consoleBuilt, createConsoleHandler, DEFAULT_CONSOLE_DIR } from './console/serve.js';
import { startControlPlaneServer, type RunningServer } from './http/server.js';
import { startGrpcNativeServer } from './http/grpc-native.js';
import type { ControlPlaneDeps, Domain } from './domain.js';
import { createAccountsDomain, type AccountsDomain } from './accounts/index.js';
import { createAgentsDomain, type AgentsDomain } from './agents/index.js';
import { createVoiceDomain, type VoiceDomain } from './voice/index.js';
import { createTelephonyDomain, type TelephonyDomain, type TelephonyOptions } from './telephony/index.js';
import { createCarrierAdapters } from './telephony/carriers/index.js';
import { createCarrierAccounts } from './telephony/carrier-accounts.js';
import { createConversationsDomain, type ConversationsDomain } from './conversations/index.js';
import type { TranscriptBus } from '../shared/records/bus.js';
import { createAnnotator } from './conversations/annotate.js';
import type { CallEvent } from './telephony/live-calls.js';
import { startJobs, type Jobs, type JobsOptions } from './jobs/index.js';
import { createPostCallRelay, type PostCallRelay } from './post-call/relay.js';
import { createWebhooksDomain, type WebhooksDomain } from './webhooks/index.js';
import { startAbandonedSweeper, type AbandonedSweeper } from './post-call/abandoned.js';
import { createOutboundClient } from '../shared/outbound/index.js';
import type { Clock } from '../shared/clock.js';
import { createCampaignsDomain, type CampaignsDomain, type DialerOptions } from './campaigns/index.js';
import { defaultLlmFactory, type LlmFactory } from './conversations/summary.js';
import { createAnalysisDomain, type AnalysisDomain } from './analysis/index.js';
import { createQaDomain, type QaDomain } from './qa/index.js';
import { createAnalyticsDomain } from './analytics/index.js';
import { createSystemAnalyticsDomain, type SystemAnalyticsDomain } from './system-analytics/index.js';
import { createAlertsDomain, type AlertsDomain } from './alerts/index.js';
import { createControlPlaneMetrics, type ControlPlaneMetrics } from './http/metrics.js';
import { createBillingDomain, type BillingDomain } from './billing/index.js';
import { createConnectorsDomain, type ConnectorsDomain } from './connectors/index.js';
import { createSimTestsDomain, type SimTestsDomain, type SimTestsDeps } from './simtests/index.js';
import { createNodeSweeper, type NodeSweeper } from './ops/node-sweeper.js';
import { createPortalDomain, type PortalDomain, type PortalOptions } from './portal/index.js';
import { isUuid } from '../shared/ids.js';
import { MEDIA_ENDED_CHECK_DELAY_S, MEDIA_ENDED_TOPIC } from '../shared/voice/media-ended.js';

export interface ControlPlane {
  server: RunningServer;
  port: number;
  /** The web console is built where this control plane serves it from (the start banner links it only then). */
  consoleServed: boolean;
  /** The grpc-js listener's port when GRPC_PORT (or `opts.grpcPort`) turned it on. */
  grpcPort?: number;
  accounts: AccountsDomain;
  agents: AgentsDomain;
  voice: VoiceDomain;
  telephony: TelephonyDomain;
  conversations: ConversationsDomain;
  webhooks: WebhooksDomain;
  campaigns: CampaignsDomain;
  analysis: AnalysisDomain;
  qa: QaDomain;
  /** Latency / usage / tool aggregates and system health (issue 17). */
  systemAnalytics: SystemAnalyticsDomain;
  alerts: AlertsDomain;
  /** Credits and usage metering (BILLING_ENABLED). */
  billing: BillingDomain;
  /** Connector catalog and connections (issue 18). */
  connectors: ConnectorsDomain;
  /** Simulation tests and the publish gate (issue 20). */
  simTests: SimTestsDomain;
  /** Human agents: roster, credentials, presence, attendance, shifts (issue 21). */
  portal: PortalDomain;
  /** The durable job queue (control-plane/jobs); every replica works it. */
  jobs: Jobs;
  /** Served on `GET /metrics` (docs/observability.md). */
  metrics: ControlPlaneMetrics;
  /** Turns ended conversations (outbox rows) into post-call jobs. */
  postCall: PostCallRelay;
  /** Closes carrier calls that never recorded an end (status `abandoned` in their event). */
  abandoned: AbandonedSweeper;
  /** Finalizes the calls of engine nodes that died (`node_lost`; docs/operations.md). */
  nodeSweeper: NodeSweeper;
  /** From now on `/ready` answers 503 (SIGTERM: before the engine's drain and the request drain). */
  markDraining(): void;
  /** `graceMs`: requests in flight may finish first (SIGTERM; `RunningServer.close`). */
  close(opts?: { graceMs?: number }): Promise<void>;
}

export interface ControlPlaneOptions {
  port?: number;
  host?: string;
  /** gRPC through @grpc/grpc-js on its own port (0: chosen at listen time). Default config.grpcPort (unset: off). */
  grpcPort?: number;
  /** Live transcript bus shared with an in-process engine's record writer (single-process mode). */
  bus?: TranscriptBus;
  /** Job queue tuning (tests poll faster). Default: the queue's defaults. */
  jobs?: Pick<JobsOptions, 'pollingIntervalSeconds' | 'maintenanceIntervalSeconds' | 'queues'>;
  /** Post-call outbox sweep period. Default 5 s. */
  postCallSweepMs?: number;
  /** Webhook retry jitter source in [0, 1) (tests pin it). Default Math.random. */
  webhookJitter?: () => number;
  /** Seconds before an answered call with no conversation is sent as a failed call.completed. Default 30. */
  webhookUnrecordedCheckS?: number;
  /**
   * Campaign dialer tuning, its own clock (tests move calling-window time; default deps.clock) and
   * the base URL its calls' carrier callbacks use (default: PUBLIC_BASE_URL, or this listener when
   * the port is chosen at listen time; replicas behind one load balancer share PUBLIC_BASE_URL).
   */
  campaigns?: { clock?: Clock; dialer?: DialerOptions; callbackBaseUrl?: string };
  /** Builds the post-call analysis LLM from an agent's published settings (tests inject failures). Default: the provider registry over the outbound client. */
  analysisLlmFor?: LlmFactory;
  /** This process's id in its system health reports. Default `cp-<random>`. */
  nodeId?: string;
  /** Builds the QA scoring LLM from an agent's published settings (tests inject failures). Default: as analysis. */
  qaLlmFor?: LlmFactory;
  /** Simulation tests: runner tuning, gate wait, stream poll, and the LLM factory (tests inject failures). */
  simTests?: Partial<Pick<SimTestsDeps, 'runner' | 'gate' | 'streamPollMs' | 'streamMaxPerUser' | 'llmFor'>>;
  /** Seconds between node-sweeper passes (tests). Default 2. */
  nodeSweepIntervalS?: number;
  /** Tests: the wait after a carrier call's media ended before it is checked (default MEDIA_ENDED_CHECK_DELAY_S). */
  mediaEndedCheckDelayS?: number;
  /** Directory of the built web console (console/build.mjs). Default dist/console. */
  consoleDir?: string;
  /** Human agent portal: presence clock and rate-limit tuning (tests). */
  portal?: PortalOptions;
  /** Telephony tuning: hold rounds, step deadlines (tests shorten them). Default: the domain's defaults. */
  telephony?: TelephonyOptions;
  /** Tests: how long a started voice session waits for its socket. Default 30 s (CONNECT_WINDOW_MS). */
  voiceConnectWindowMs?: number;
}

export async function startControlPlane(deps: ControlPlaneDeps, opts: ControlPlaneOptions = {}): Promise<ControlPlane> {
  const jobs = await startJobs({ sql: deps.sql, logger: deps.logger, ...opts.jobs });
  const metrics = createControlPlaneMetrics({ config: deps.config, logger: deps.logger, jobs });
  const postCall = await createPostCallRelay({ sql: deps.sql, logger: deps.logger, clock: deps.clock, sweepMs: opts.postCallSweepMs });
  const accounts = await createAccountsDomain(deps);
  // Tenant URLs reached from the control plane (summary LLM base_url, connector vendors) go through the address policy.
  const outbound = createOutboundClient({ allowCidrs: deps.config.outboundAllowCidrs, clock: deps.clock });
  // Before agents: connector tools bind the workspace's connections (issue 18).
  const connectors = createConnectorsDomain({ ...deps, auth: accounts.auth, outbound, onWorkspaceDelete: accounts.onWorkspaceDelete });
  // Before agents: publishing asks its publish gate (the draft's `gate` test cases).
  const simTests = await createSimTestsDomain({
    ...deps,
    auth: accounts.auth,
    jobs,
    outbound,
    llmFor: opts.simTests?.llmFor ?? defaultLlmFactory(deps.clock, outbound),
    runner: opts.simTests?.runner,
    gate: opts.simTests?.gate,
    streamPollMs: opts.simTests?.streamPollMs,
    streamMaxPerUser: opts.simTests?.streamMaxPerUser,
  });
  const agents = createAgentsDomain({ ...deps, auth: accounts.auth, connectors: connectors.binder, publishGate: simTests.publishGate });
  const voice = createVoiceDomain({ ...deps, liveConfig: agents.liveConfig, liveConnections: connectors.liveConnections, connectWindowMs: opts.voiceConnectWindowMs });
  // Telephony is created further down (it needs the post-call wiring); the route calls it per request.
  const conversations = await createConversationsDomain({ ...deps, auth: accounts.auth, liveConfig: agents.liveConfig, bus: opts.bus, jobs, outbound, fetchRecording: (ref, signal) => telephony.fetchRecording(ref, signal) });
  // Every conversation that ends (engine, carrier or PUT) gets its summary job.
  postCall.on((ev, tx) => conversations.summarizer.enqueue(ev.conversation_id, tx));
  // Every carrier call that ends gets its signed call.completed event (after the analysis hold).
  // Carrier accounts per workspace (issue 24): set with the call-center settings, read by telephony.
  const carrierAdapters = createCarrierAdapters(() => deps.config);
  const carrierAccounts = createCarrierAccounts({ sql: deps.sql, secrets: deps.secrets, carriers: carrierAdapters });
  const webhooks = await createWebhooksDomain({ ...deps, auth: accounts.auth, jobs, outbound, random: opts.webhookJitter, unrecordedCheckS: opts.webhookUnrecordedCheckS, carrierAccounts });
  postCall.on(webhooks.onConversationEnded);
  // Every completed call of an agent with active analysis schemas gets its extraction job.
  const analysis = await createAnalysisDomain({
    ...deps,
    auth: accounts.auth,
    jobs,
    liveConfig: agents.liveConfig,
    llmFor: opts.analysisLlmFor ?? defaultLlmFactory(deps.clock, outbound),
  });
  postCall.on(analysis.onConversationEnded);
  // Every completed call of an agent with an active QA rubric gets its pending score and scoring job.
  const qa = await createQaDomain({ ...deps, auth: accounts.auth, jobs, liveConfig: agents.liveConfig, llmFor: opts.qaLlmFor ?? defaultLlmFactory(deps.clock, outbound) });
  postCall.on(qa.onConversationEnded);
  // Every ended conversation is debited once, in the outbox transaction (BILLING_ENABLED).
  const billing = await createBillingDomain({ ...deps, auth: accounts.auth, jobs });
  postCall.on(billing.onConversationEnded);
  let draining = false;
  const health: Domain = { services: [{ service: HealthService, impl: createHealthService({ ...deps, draining: () => draining }) }], routes: healthRoutes };
  // Carrier callbacks (final status, AMD verdict, recording) land on the call's conversation too.
  const annotator = createAnnotator(deps);
  // Created after telephony (it dials through it); the hook reaches it once it exists.
  let campaigns: CampaignsDomain | undefined;
  // Created after telephony too (hand-offs dial through it).
  let portal: PortalDomain | undefined;
  const onCallEvent = (ev: CallEvent) => {
    campaigns?.onCallEvent(ev);
    portal?.onCallEvent(ev);
    const patch = callEventPatch(ev, deps.clock.now());
    if (patch && ev.call.session_id) annotator.annotate(ev.call, patch);
    // A call the carrier never connected has no conversation: its `failed` event starts here.
    webhooks.events.onCarrierCallEnded(ev).catch((err: Error) => deps.logger.warn({ err, callId: ev.call.call_id }, 'failed-call webhook not queued'));
  };
  const telephony = createTelephonyDomain({
    ...deps,
    auth: accounts.auth,
    liveConfig: agents.liveConfig,
    findAgentByNumber: agents.findAgentByNumber,
    voice,
    onCallEvent,
    carriers: carrierAdapters,
    workspaceCarriers: (ws) => carrierAccounts.resolve(ws),
    outbound,
    jobs,
    options: opts.telephony,
    // A hand-off's recording named after its call ended (Telnyx, Plivo, Vonage) reaches the portal's transcript.
    lateRecordings: {
      awaiting: async (callId) => portal?.transcriber.awaiting(callId),
      arrived: async (callId, carrier, recording) => portal?.transcriber.arrived(callId, carrier, recording),
    },
  });
  let listeningBase = '';
  campaigns = createCampaignsDomain({
    sql: deps.sql,
    logger: deps.logger,
    clock: opts.campaigns?.clock ?? deps.clock,
    auth: accounts.auth,
    jobs,
    telephony,
    publicBase: () => listeningBase,
    options: opts.campaigns?.dialer,
  });
  const analytics = createAnalyticsDomain({ ...deps, auth: accounts.auth });
  const systemAnalytics = createSystemAnalyticsDomain({ ...deps, auth: accounts.auth, jobs });
  // Alert rules evaluated on the job queue; notifications by mail and through the outbound client.
  const alerts = await createAlertsDomain({ ...deps, auth: accounts.auth, jobs, mailer: accounts.mailer, outbound });
  portal = await createPortalDomain(
    {
      ...deps,
      auth: accounts.auth,
      jobs,
      mailer: accounts.mailer,
      liveConfig: (agentId) => agents.liveConfig(agentId),
      liveCall: (callId) => telephony.calls.get(callId),
      dialClient: (callId, identity) => telephony.dialClient(callId, identity, listeningBase),
      fetchRecording: (ref, signal) => telephony.fetchRecording(ref, signal),
      outbound,
      handOffRefusal: (callId) => telephony.handOffRefusal(callId),
      hangUp: (callId) => telephony.hangUp(callId),
    },
    opts.portal,
  );
  const domains: Domain[] = [health, accounts, agents, voice, telephony, conversations, webhooks, campaigns, analysis, qa, analytics, systemAnalytics, alerts, billing, connectors, simTests, portal];
  const consoleDir = opts.consoleDir ?? DEFAULT_CONSOLE_DIR;
  const server = await startControlPlaneServer({
    port: opts.port ?? deps.config.httpPort,
    host: opts.host ?? deps.config.host,
    logger: deps.logger,
    maxBodyBytes: deps.config.maxBodyBytes,
    authenticate: (ctx) => accounts.auth.principal(ctx),
    maxConnections: deps.config.httpMaxConnections,
    services: domains.flatMap((d) => d.services),
    routes: domains.flatMap((d) => d.routes),
    rawHandlers: [metrics.handler, ...domains.flatMap((d) => d.rawHandlers ?? [])],
    observe: metrics.observe,
    onResponse: (status, ms) => systemAnalytics.meter.record(status, ms),
    cors: createCors(deps.config.corsOrigins),
    console: createConsoleHandler({ dir: consoleDir, publicBaseUrl: deps.config.publicBaseUrl }),
    upgradeHandlers: [portal.upgrade],
  });
  const grpcPort = opts.grpcPort ?? deps.config.grpcPort;
  const grpcServer = grpcPort === undefined ? undefined : await startGrpcNativeServer({ port: grpcPort, host: opts.host ?? deps.config.host, logger: deps.logger, maxBodyBytes: deps.config.maxBodyBytes, services: domains.flatMap((d) => d.services), observe: metrics.observe, authenticate: (ctx) => accounts.auth.principal(ctx) });
  await postCall.start();
  // Carrier callbacks of campaign calls: PUBLIC_BASE_URL, or this listener when the port is chosen at listen time.
  listeningBase = opts.campaigns?.callbackBaseUrl ?? publicBaseOf(deps.config.publicBaseUrl, deps.config.httpPort, server.port);
  await campaigns.start();
  await systemAnalytics.startReporting({ connections: () => server.connections?.() ?? 0, nodeId: opts.nodeId });
  const abandoned = startAbandonedSweeper({ sql: deps.sql, clock: deps.clock, logger: deps.logger });
  // Node loss and crash repair on the job queue; the first pass now (a restart repairs at once).
  const nodeSweeper = createNodeSweeper({
    sql: deps.sql,
    jobs,
    clock: deps.clock,
    logger: deps.logger,
    registry: deps.registry,
    lostAfterMs: deps.config.nodeLostAfterS * 1000,
    intervalS: opts.nodeSweepIntervalS,
    endLostCall: (callId, reason) => telephony.endLostCall(callId, reason),
  });
  await jobs.work('ops.node-sweep', (job) => nodeSweeper.run(job), { concurrency: 1 });
  // Inbound calls on event carriers whose spoken step (refusal, hold round) never ended.
  await jobs.work('telephony.step-deadline', async (job) => void (await telephony.runStepDeadline(job.data)), { concurrency: 2 });
  // Carrier calls whose media ended: ended a little later unless the carrier's callback did it.
  await jobs.work('telephony.media-ended', async (job) => void (await telephony.endIfStale(job.data.call_id)), { concurrency: 4 });
  const unsubscribeMediaEnded = await deps.registry.invalidations.subscribe((topic, key) => {
    if (topic !== MEDIA_ENDED_TOPIC || !isUuid(key)) return;
    // Every replica hears it; the key makes it one job.
    void jobs.enqueue('telephony.media-ended', { call_id: key }, { singletonKey: key, delaySeconds: opts.mediaEndedCheckDelayS ?? MEDIA_ENDED_CHECK_DELAY_S }).catch((err: Error) => deps.logger.warn({ err, callId: key }, 'ended call not queued for its check (a read of the calls ends it)'));
  });
  await jobs.keepChain(() => nodeSweeper.kick());
  let closed = false;
  return {
    server,
    consoleServed: consoleBuilt(consoleDir),
    port: server.port,
    grpcPort: grpcServer?.port,
    accounts,
    agents,
    voice,
    telephony,
    conversations,
    webhooks,
    campaigns,
    analysis,
    qa,
    systemAnalytics,
    alerts,
    billing,
    connectors,
    simTests,
    portal,
    jobs,
    metrics,
    postCall,
    abandoned,
    nodeSweeper,
    markDraining() {
      draining = true;
    },
    async close(closeOpts = {}) {
      if (closed) return;
      closed = true;
      draining = true;
      // First: no new job here while the domains close and hand their work over to other replicas.
      await jobs.stopFetching();
      await unsubscribeMediaEnded();
      await server.close(closeOpts);
      await grpcServer?.close();
      annotator.close();
      abandoned.close();
      await postCall.close();
      for (const d of domains.reverse()) await d.close?.();
      await jobs.close();
      await outbound.close();
    },
  };
}

/** Mirrors telephony's `publicBase` for work without a request (the campaign dialer). */
function publicBaseOf(configured: string, httpPort: number, listeningPort: number): string {
  const base = configured.replace(/\/+$/, '');
  let port = '';
  try {
    port = new URL(base).port;
  } catch {
    // validated by config
  }
  return port === '0' || httpPort === 0 ? `http://127.0.0.1:${listeningPort}` : base;
}

function callEventPatch(ev: CallEvent, nowMs: number): Record<string, unknown> | undefined {
  const c = ev.call;
  switch (ev.type) {
    case 'ended':
      // `call_ended_at`: when the carrier call ended, after the AI's stint when it was transferred
      // (call.completed's `ended_at` then covers the transferred leg, and lists its recording).
      return {
        call_id: c.call_id,
        call_status: ev.detail ?? 'completed',
        carrier_duration_seconds: ev.durationS ?? null,
        provider_call_sid: c.provider_call_sid,
        call_ended_at: new Date(nowMs).toISOString(),
        ...(ev.dialRecording?.sid ? { transfer_recording_sid: ev.dialRecording.sid, transfer_recording_url: ev.dialRecording.url } : {}),
      };
    case 'amd':
      return { amd_verdict: c.amd_verdict || ev.detail };
    case 'recording':
      return { recording_url: c.recording_url || ev.detail, recording_sid: c.recording_sid };
    case 'transferred':
      return { transferred_to: c.transferred_to || ev.detail };
    default:
      return undefined;
  }
}
