/**
 * The portal domain (issue 21; spec doc 3 "Human agent portal", "Sessions"): the call-center
 * roster of human agents, their portal credentials, presence over `/api/v1/sessions/ws`,
 * attendance with shift adherence, shifts, presence alerts and `/sessions/active`. Presence state
 * is in Postgres (every replica shares it); the sweep runs on the job queue
 * (`portal.presence-sweep`). Public contract: docs/portal.md.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { ServiceImpl } from '@connectrpc/connect';
import { PortalService } from '../../shared/gen/voiceplane/v1/portal_pb.js';
import type { Clock } from '../../shared/clock.js';
import { PORTAL_REQUEST_TIMEOUT_MS, withTimeout } from './timeout.js';
import type { Mailer } from '../accounts/mail.js';
import type { Auth } from '../http/auth.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import type { Jobs } from '../jobs/index.js';
import type { LiveAgentConfig } from '../agents/types.js';
import type { CallEvent, CallRecord } from '../telephony/index.js';
import { createCredentials, type Credentials } from './credentials.js';
import { resetPage } from './reset-page.js';
import { DEFAULT_RATE_LIMITS, RateLimiter, type RateLimits } from '../accounts/rate-limit.js';
import { createPresence, type Presence } from './presence.js';
import { PORTAL_RATE, TokenBuckets, type TokenBucketOptions } from './rate-limit.js';
import { portalRoutes } from './routes.js';
import { authenticateFirst, createAccess, createRosterService } from './service.js';
import { createPresenceService } from './service-presence.js';
import { createPresenceSockets, type PresenceSockets } from './socket.js';
import { createSweep, type Sweep } from './sweep.js';
import { createHandoff, OFFER_TOPIC, type Handoff } from './handoff.js';
import { HANDOFF_TOPIC } from '../../shared/voice/handoff.js';
import { isUuid } from '../../shared/ids.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { RecordingRef } from '../telephony/index.js';
import { createTranscriber, type Transcriber } from './transcribe.js';

export type PortalDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'registry'> & {
  auth: Auth;
  jobs: Jobs;
  mailer: Mailer;
  liveConfig(agentId: string): Promise<LiveAgentConfig>;
  /** Live carrier calls (telephony's registry records). */
  liveCall(callId: string): Promise<CallRecord | undefined>;
  /** Telephony's hand-off dial (the carrier dials the person; the AI drops off): the carrier that dialed. */
  dialClient(callId: string, identity: string): Promise<string | undefined>;
  /** Telephony's download of a carrier recording (the human segment's transcript). */
  fetchRecording(ref: RecordingRef, signal?: AbortSignal): Promise<Uint8Array>;
  /** Tenant provider `base_url`s (the transcription ASR) go through it. */
  outbound: OutboundClient;
  /** Whether the call's carrier (and account) can hand it to a person at all (Exotel cannot). */
  handOffRefusal(callId: string): Promise<string | undefined>;
  /** Telephony's hang-up of a live call (`call.end` from the person ends the carrier call). */
  hangUp?(callId: string): Promise<boolean>;
};

/** Bus topic: `agentId:sessionId` whose presence session ended outside its socket. */
const SESSION_END_TOPIC = 'portal.session_end';

/** A stored hand-off request older than this is dropped by the sweep. */
const LOST_REQUEST_MAX_AGE_S = 600;

/** Registry command timeout when telling a live session something. */
const COMMAND_TIMEOUT_MS = 3000;

export interface PortalOptions {
  /** Presence and attendance time (tests inject one). Default deps.clock. */
  clock?: Clock;
  /** The per-IP token bucket (tests shrink it). Default 100/s, burst 200. */
  rate?: Partial<TokenBucketOptions>;
  /** Portal request timeout. Default 30 s (spec). */
  requestTimeoutMs?: number;
  /** The login's own limits (accounts/rate-limit.ts defaults: 120/min per IP, 10/min per agent code). */
  loginLimits?: Partial<Pick<RateLimits, 'portalLoginPerIp' | 'portalLoginPerCode'>>;
}


export interface PortalDomain extends Domain {
  presence: Presence;
  credentials: Credentials;
  sockets: PresenceSockets;
  sweep: Sweep;
  /** Calls handed to people (handoff.ts). */
  handoff: Handoff;
  /** Transcripts of human segments (transcribe.ts). */
  transcriber: Transcriber;
  /** Telephony hook: a carrier call that ended ends its human segment. */
  onCallEvent(ev: CallEvent): void;
  /** For the server's `upgrade` event. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
}

export async function createPortalDomain(deps: PortalDeps, opts: PortalOptions = {}): Promise<PortalDomain> {
  const { config, logger, sql, jobs } = deps;
  const clock = opts.clock ?? deps.clock;
  const buckets = new TokenBuckets(deps.clock, { ...PORTAL_RATE, ...opts.rate });
  const loginLimiter = new RateLimiter(deps.registry.windows, deps.clock, { ...DEFAULT_RATE_LIMITS, ...opts.loginLimits });
  const presence = createPresence({ sql, clock, lateGraceMin: config.portalLateGraceMin });
  const credentials = createCredentials({
    sql,
    clock,
    logger,
    mailer: deps.mailer,
    mailEnabled: config.portalEmailEnabled,
    publicBaseUrl: config.publicBaseUrl,
    async onLoginsRevoked(agentId, at) {
      const [a] = await sql<{ presence_session_id: string | null }[]>`select presence_session_id from human_agents where id = ${agentId}`;
      if (!a?.presence_session_id) return;
      await presence.logout(agentId, a.presence_session_id, 'password_changed', 'admin', at.getTime());
      await endSocket(agentId, a.presence_session_id);
    },
  });
  /**
   * Tells the replica holding the agent's socket that its session ended (own replica included):
   * it gets SESSION_ENDED and close 4009 now, not at its next message or heartbeat timeout.
   * Best effort: a lost notice leaves the documented fallback (the next message learns it).
   */
  async function endSocket(agentId: string, sessionId: string): Promise<void> {
    await deps.registry.invalidations.publish(SESSION_END_TOPIC, `${agentId}:${sessionId}`).catch((err: Error) => logger.warn({ err, agentId }, 'presence socket not told its session ended'));
  }
  const access = createAccess({ sql, auth: deps.auth, buckets });
  const handoff = createHandoff({
    sql,
    clock,
    logger,
    presence,
    bus: deps.registry.invalidations,
    heartbeatTimeoutS: config.portalHeartbeatTimeoutS,
    liveConfig: deps.liveConfig,
    dialClient: deps.dialClient,
    handOffRefusal: deps.handOffRefusal,
    hangUp: deps.hangUp,
    async say(sessionId, text) {
      const owner = await deps.registry.sessions.sessionOwner(sessionId);
      if (owner) await deps.registry.commands.sendCommand(owner, { kind: 'say', sessionId, payload: { text } }, COMMAND_TIMEOUT_MS);
    },
  });
  const transcriber = createTranscriber({ sql, jobs, clock: deps.clock, logger, outbound: deps.outbound, liveConfig: deps.liveConfig, fetchRecording: deps.fetchRecording });
  const sweep = createSweep({
    sql,
    jobs,
    clock,
    logger,
    presence,
    intervalS: config.portalSweepIntervalS,
    heartbeatTimeoutS: config.portalHeartbeatTimeoutS,
    longBreakMin: config.portalLongBreakMin,
    expireOffers: () => handoff.expireOffers(),
    abandonTranscripts: () => transcriber.abandonStale(),
    async retryLostRequests() {
      // Requests of calls already handed (or asked for) otherwise, or too old to matter (the call
      // is over, or the caller has long been served by the AI), are dropped.
      await sql`delete from human_handoff_requests r where r.requested_at < now() - make_interval(secs => ${LOST_REQUEST_MAX_AGE_S})
        or exists (select 1 from human_handoffs h where h.call_id = r.call_id)`;
      const rows = await sql<{ call_id: string }[]>`select call_id from human_handoff_requests order by requested_at limit 100`;
      for (const r of rows) await jobs.enqueue('portal.handoff', { call_id: r.call_id }, { singletonKey: r.call_id });
      return rows.length;
    },
  });
  await jobs.work('portal.presence-sweep', (job) => sweep.run(job), { concurrency: 1 });
  await jobs.keepChain(() => sweep.kick());
  await jobs.work('portal.transcribe', (job) => transcriber.run(job), { concurrency: 1 });
  const sockets = createPresenceSockets({ clock, logger, credentials, presence, buckets, heartbeatTimeoutS: config.portalHeartbeatTimeoutS, handoff });
  // Engines ask for a person (tool or flow node): every replica hears it, one job per call acts.
  async function handleRequest(callId: string): Promise<void> {
    const call = await deps.liveCall(callId);
    if (!call || call.transferred_to || !call.provider_call_sid) return;
    const refused = await handoff.refusal(call.agent_id);
    if (refused) return void logger.warn({ callId: call.call_id, refused }, 'hand-off refused');
    if (await handoff.isOpen(call.call_id)) return;
    // A carrier that cannot dial a person: the caller hears the fallback and the AI stays.
    const noCarrier = await handoff.carrierRefusal(call.call_id);
    if (noCarrier) {
      logger.warn({ callId: call.call_id, carrier: call.telephony_provider, refused: noCarrier }, 'hand-off refused');
      return handoff.fallback(call.call_id, call.session_id);
    }
    await handoff.request({ workspaceId: call.workspace_id, callId: call.call_id, sessionId: call.session_id, aiAgentId: call.agent_id });
  }
  await jobs.work('portal.handoff', async (job) => {
    await handleRequest(job.data.call_id);
    // Handled (or nothing to do): a stored request of this call is done too. A throw (the
    // registry unreachable) keeps it for the next sweep.
    await sql`delete from human_handoff_requests where call_id = ${job.data.call_id}`;
  }, { concurrency: 2 });
  // Offers reach the replica that holds the agent's socket (best effort; heartbeats repeat them).
  const unsubscribe = await deps.registry.invalidations.subscribe((topic, key) => {
    if (topic === HANDOFF_TOPIC && isUuid(key)) {
      void jobs.enqueue('portal.handoff', { call_id: key }, { singletonKey: key }).catch((err: Error) => logger.warn({ err, callId: key }, 'hand-off job not queued'));
      return;
    }
    if (topic === SESSION_END_TOPIC) {
      const [agentId, sessionId] = key.split(':');
      const live = sockets.local.get(agentId ?? '');
      if (live && live.sessionId === sessionId) live.sessionEnded();
      return;
    }
    if (topic !== OFFER_TOPIC) return;
    void handoff
      .offerFor(key)
      .then((o) => o && sockets.local.get(o.humanAgentId)?.offer(o.offer))
      .catch((err: Error) => logger.warn({ err }, 'offer not delivered (the next heartbeat repeats it)'));
  });
  const impl = withTimeout(
    authenticateFirst(
      {
        ...createRosterService({ sql, clock, access, credentials, presence, handoff, liveCall: deps.liveCall, loginLimiter, endSocket }),
        ...createPresenceService({ sql, clock, auth: deps.auth, access, heartbeatTimeoutS: config.portalHeartbeatTimeoutS }),
      },
      access,
    ) as ServiceImpl<typeof PortalService>,
    deps.clock,
    opts.requestTimeoutMs ?? PORTAL_REQUEST_TIMEOUT_MS,
  );
  return {
    // The per-address rate limit comes before the credential check of every edge (429 first).
    services: [{ service: PortalService, impl, beforeAuth: access.limit }] as ServiceBinding[],
    routes: portalRoutes,
    rawHandlers: [resetPage({ credentials, buckets, logger })],
    presence,
    credentials,
    sockets,
    sweep,
    handoff,
    transcriber,
    onCallEvent(ev) {
      if (ev.type !== 'ended') return;
      handoff.end(ev.call.call_id).catch((err: Error) => logger.warn({ err, callId: ev.call.call_id }, 'human segment not closed (the sweep of stale sessions does not cover it)'));
      transcriber.onCallEnded(ev).catch((err: Error) => logger.warn({ err, callId: ev.call.call_id }, 'human segment recording not queued for transcription'));
    },
    upgrade: (req, socket, head) => sockets.handleUpgrade(req, socket, head),
    async close() {
      await unsubscribe();
      await sockets.close();
    },
  };
}
