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
import { createPresence, type Presence } from './presence.js';
import { PORTAL_RATE, TokenBuckets, type TokenBucketOptions } from './rate-limit.js';
import { portalRoutes } from './routes.js';
import { createAccess, createRosterService } from './service.js';
import { createPresenceService } from './service-presence.js';
import { createPresenceSockets, type PresenceSockets } from './socket.js';
import { createSweep, type Sweep } from './sweep.js';
import { createHandoff, OFFER_TOPIC, type Handoff } from './handoff.js';
import { HANDOFF_TOPIC } from '../../shared/voice/handoff.js';
import { isUuid } from '../../shared/ids.js';

export type PortalDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'registry'> & {
  auth: Auth;
  jobs: Jobs;
  mailer: Mailer;
  liveConfig(agentId: string): Promise<LiveAgentConfig>;
  /** Live carrier calls (telephony's registry records). */
  liveCall(callId: string): Promise<CallRecord | undefined>;
  /** Telephony's hand-off dial (the carrier dials the person's client identity; the AI drops off). */
  dialClient(callId: string, identity: string): Promise<boolean>;
};

/** Registry command timeout when telling a live session something. */
const COMMAND_TIMEOUT_MS = 3000;

export interface PortalOptions {
  /** Presence and attendance time (tests inject one). Default deps.clock. */
  clock?: Clock;
  /** The per-IP token bucket (tests shrink it). Default 100/s, burst 200. */
  rate?: Partial<TokenBucketOptions>;
  /** Portal request timeout. Default 30 s (spec). */
  requestTimeoutMs?: number;
}


export interface PortalDomain extends Domain {
  presence: Presence;
  credentials: Credentials;
  sockets: PresenceSockets;
  sweep: Sweep;
  /** Calls handed to people (handoff.ts). */
  handoff: Handoff;
  /** Telephony hook: a carrier call that ended ends its human segment. */
  onCallEvent(ev: CallEvent): void;
  /** For the server's `upgrade` event. */
  upgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
}

export async function createPortalDomain(deps: PortalDeps, opts: PortalOptions = {}): Promise<PortalDomain> {
  const { config, logger, sql, jobs } = deps;
  const clock = opts.clock ?? deps.clock;
  const buckets = new TokenBuckets(deps.clock, { ...PORTAL_RATE, ...opts.rate });
  const credentials = createCredentials({ sql, clock, logger, mailer: deps.mailer, mailEnabled: config.portalEmailEnabled, publicBaseUrl: config.publicBaseUrl });
  const presence = createPresence({ sql, clock, lateGraceMin: config.portalLateGraceMin });
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
    async say(sessionId, text) {
      const owner = await deps.registry.sessions.sessionOwner(sessionId);
      if (owner) await deps.registry.commands.sendCommand(owner, { kind: 'say', sessionId, payload: { text } }, COMMAND_TIMEOUT_MS);
    },
  });
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
  });
  await jobs.work('portal.presence-sweep', (job) => sweep.run(job), { concurrency: 1 });
  await sweep.kick();
  const sockets = createPresenceSockets({ clock, logger, credentials, presence, buckets, heartbeatTimeoutS: config.portalHeartbeatTimeoutS, handoff });
  // Engines ask for a person (tool or flow node): every replica hears it, one job per call acts.
  await jobs.work('portal.handoff', async (job) => {
    const call = await deps.liveCall(job.data.call_id);
    if (!call || call.transferred_to || !call.provider_call_sid) return;
    const refused = await handoff.refusal(call.agent_id);
    if (refused) return void logger.warn({ callId: call.call_id, refused }, 'hand-off refused');
    if (await handoff.isOpen(call.call_id)) return;
    await handoff.request({ workspaceId: call.workspace_id, callId: call.call_id, sessionId: call.session_id, aiAgentId: call.agent_id });
  }, { concurrency: 2 });
  // Offers reach the replica that holds the agent's socket (best effort; heartbeats repeat them).
  const unsubscribe = await deps.registry.invalidations.subscribe((topic, key) => {
    if (topic === HANDOFF_TOPIC && isUuid(key)) {
      void jobs.enqueue('portal.handoff', { call_id: key }, { singletonKey: key }).catch((err: Error) => logger.warn({ err, callId: key }, 'hand-off job not queued'));
      return;
    }
    if (topic !== OFFER_TOPIC) return;
    void handoff
      .offerFor(key)
      .then((o) => o && sockets.local.get(o.humanAgentId)?.offer(o.offer))
      .catch((err: Error) => logger.warn({ err }, 'offer not delivered (the next heartbeat repeats it)'));
  });
  const impl = withTimeout(
    {
      ...createRosterService({ sql, clock, access, credentials, presence, handoff, liveCall: deps.liveCall }),
      ...createPresenceService({ sql, clock, auth: deps.auth, access, heartbeatTimeoutS: config.portalHeartbeatTimeoutS }),
    } as ServiceImpl<typeof PortalService>,
    deps.clock,
    opts.requestTimeoutMs ?? PORTAL_REQUEST_TIMEOUT_MS,
  );
  return {
    services: [{ service: PortalService, impl }] as ServiceBinding[],
    routes: portalRoutes,
    presence,
    credentials,
    sockets,
    sweep,
    handoff,
    onCallEvent(ev) {
      if (ev.type !== 'ended') return;
      handoff.end(ev.call.call_id).catch((err: Error) => logger.warn({ err, callId: ev.call.call_id }, 'human segment not closed (the sweep of stale sessions does not cover it)'));
    },
    upgrade: (req, socket, head) => sockets.handleUpgrade(req, socket, head),
    async close() {
      await unsubscribe();
      await sockets.close();
    },
  };
}
