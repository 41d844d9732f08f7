/**
 * The conversations domain (issue 5): durable records of every call and their API. REST + gRPC +
 * Connect routes (service.ts), the live transcript stream (SSE, stream.ts), signed per-turn audio
 * links (audio-links.ts), post-call summaries (summary.ts) and audio retention (sweeper.ts).
 * The rows themselves are written by the engine's record writer (media-engine/records/).
 */
import { ConversationService } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import { createTranscriptBus, type TranscriptBus } from '../../shared/records/bus.js';
import type { Auth } from '../http/auth.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { ServiceBinding } from '../http/server.js';
import type { ControlPlaneDeps, Domain } from '../domain.js';
import { createAudioHandler, createAudioLinks, type AudioLinks } from './audio-links.js';
import { createRecordingHandler, type FetchRecording } from './recordings.js';
import { conversationRoutes } from './routes.js';
import { createConversationService } from './service.js';
import { createStreamHandler } from './stream.js';
import { createSummarizer, type LiveConfigFn, type LlmFactory, type Summarizer } from './summary.js';
import type { Jobs } from '../jobs/index.js';
import { createAudioSweeper, type AudioSweeper } from './sweeper.js';

export type { LiveConfigFn, LlmFactory } from './summary.js';

export type ConversationsDeps = Pick<ControlPlaneDeps, 'config' | 'logger' | 'clock' | 'sql' | 'jwtKey'> & {
  auth: Auth;
  /**
   * Live transcript bus shared with the engine's record writer. Default: Redis pub/sub when
   * REDIS_URL is set (works across processes), else a private in-process bus (then live turns
   * only reach SSE clients if the writer was given this same instance: pass `bus`).
   */
  bus?: TranscriptBus;
  /** The agents domain's published-config resolver; without it summaries are skipped (logged). */
  liveConfig?: LiveConfigFn;
  /** Builds the summary LLM from the agent's settings. Default: sim in-process, others via the engine's provider registry. */
  llmFor?: LlmFactory;
  /** Client for tenant URLs (summary LLM `base_url`), see shared/outbound. */
  outbound?: OutboundClient;
  /** The control plane's durable job queue: summaries run as `post-call.summary` jobs. */
  jobs: Jobs;
  /** Telephony's recording download: the recording proxy route (recordings.ts). Absent: that route is not served. */
  fetchRecording?: FetchRecording;
};

export interface ConversationsOptions {
  /** Signed audio link lifetime. Default 15 min. */
  audioLinkTtlMs?: number;
  /** SSE heartbeat. Default 15 s. */
  heartbeatMs?: number;
  /** Transcript streams per process (503 beyond) and per user (429 beyond). Defaults 1000 and 100. */
  maxStreams?: number;
  maxStreamsPerUser?: number;
  /** Retention sweep period. Default 1 h (first run 60 s after start). */
  sweepIntervalMs?: number;
  /** Redis channel prefix of the default bus. Default `vp`. */
  busPrefix?: string;
}

export interface ConversationsDomain extends Domain {
  bus: TranscriptBus;
  links: AudioLinks;
  summarizer: Summarizer;
  sweeper: AudioSweeper;
  /** Open SSE streams. */
  readonly openStreams: number;
}

export async function createConversationsDomain(deps: ConversationsDeps, opts: ConversationsOptions = {}): Promise<ConversationsDomain> {
  const { config, logger, clock, sql } = deps;
  const ownBus = !deps.bus;
  const bus = deps.bus ?? (await createTranscriptBus({ redisUrl: config.redisUrl, prefix: opts.busPrefix, logger }));
  const links = createAudioLinks({ jwtKey: deps.jwtKey, clock, publicBaseUrl: config.publicBaseUrl, ttlMs: opts.audioLinkTtlMs });
  const summarizer = await createSummarizer({ sql, logger, clock, jobs: deps.jobs, liveConfig: deps.liveConfig, llmFor: deps.llmFor, outbound: deps.outbound });
  const sweeper = createAudioSweeper({ sql, dataDir: config.dataDir, clock, logger, retentionDays: config.audioRetentionDays, intervalMs: opts.sweepIntervalMs });
  const stream = createStreamHandler({ sql, auth: deps.auth, bus, links, clock, logger, heartbeatMs: opts.heartbeatMs, maxStreams: opts.maxStreams, maxStreamsPerUser: opts.maxStreamsPerUser });
  const audio = createAudioHandler({ sql, links, dataDir: config.dataDir, logger, clock });
  const recordings = deps.fetchRecording ? createRecordingHandler({ sql, auth: deps.auth, logger, fetchRecording: deps.fetchRecording }) : undefined;
  const services: ServiceBinding[] = [
    { service: ConversationService, impl: createConversationService({ sql, auth: deps.auth, links, summarizer, clock, logger }) },
  ] as ServiceBinding[];
  let closed = false;
  return {
    services,
    routes: conversationRoutes,
    rawHandlers: recordings ? [audio, stream.handler, recordings] : [audio, stream.handler],
    bus,
    links,
    summarizer,
    sweeper,
    get openStreams() {
      return stream.openStreams;
    },
    async close() {
      if (closed) return;
      closed = true;
      stream.closeAll();
      await sweeper.close();
      await summarizer.close();
      if (ownBus) await bus.close();
    },
  };
}
