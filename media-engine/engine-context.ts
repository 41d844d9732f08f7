/**
 * What the parts of an engine node share (node.ts builds it once): options, the node's calls,
 * its pre-warmed providers, socket admission, and the capacity rule.
 */
import type { Tracer } from '@opentelemetry/api';
import type { Clock } from '../shared/clock.js';
import type { EngineMetrics } from '../shared/observability/engine-metrics.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { OutboundClient } from '../shared/outbound/index.js';
import type { Registry } from '../shared/registry/index.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import type { Sql } from '../shared/db/client.js';
import type { SecretBox } from '../shared/secrets.js';
import type { CallActor } from './session/actor.js';
import type { CallConnectors } from './session/connector-tools.js';
import type { CallRecorder } from './session/recorder.js';
import type { KnowledgeSearch } from './knowledge/search.js';
import type { CallProviders, PrewarmCache } from './prewarm.js';
import type { SocketAdmission } from './transports/socket-admission.js';

export interface EngineNodeOptions {
  config: Config;
  logger: Logger;
  clock: Clock;
  registry: Registry;
  /** Durable records (conversations); one per call, told this node's id (stored for the node-loss sweeper). */
  recorderFactory?: (config: SessionConfig, nodeId: string) => CallRecorder | undefined;
  /** Test hook: provider overrides (e.g. sim providers with scripted latencies). */
  providerFactory?: (config: SessionConfig) => CallProviders;
  nodeId?: string;
  port?: number;
  host?: string;
  heartbeatMs?: number;
  /** How long pre-warmed providers wait for their session's socket before being closed. Default 30 000. */
  prewarmTtlMs?: number;
  /** Client for tenant URLs (tools, provider base_url). Default: one built from `config.outboundAllowCidrs`, closed with the node. */
  outbound?: OutboundClient;
  /** Traces of calls (tests: a provider with an in-memory exporter). Default: from OTEL_EXPORTER_OTLP_ENDPOINT, else none. */
  tracer?: Tracer;
  /** Answers calls' `search_knowledge` (Postgres full-text search, media-engine/knowledge). Absent: calls get no knowledge search. */
  knowledge?: KnowledgeSearch;
  /** The records writer's queue depth, exported as `voiceplane_records_queue_depth`. */
  recordsQueued?: () => number;
  /**
   * How long the records writer has been failing to reach Postgres (ms, 0 when healthy). From
   * RECORDS_UNAVAILABLE_AFTER_MS on, the node is not ready: `/ready` 503 and no new sessions.
   */
  recordsFailingForMs?: () => number;
  /**
   * Connector tools on calls (issue 18): the database holding the connections and the key that
   * opens their credentials. Both needed; absent: connector tool calls are error results.
   */
  sql?: Sql;
  secrets?: SecretBox;
}

export interface EngineContext {
  opts: EngineNodeOptions;
  config: Config;
  logger: Logger;
  clock: Clock;
  registry: Registry;
  nodeId: string;
  outbound: OutboundClient;
  /** Live calls by session id. */
  calls: Map<string, CallActor>;
  prewarmed: PrewarmCache;
  /** Sockets per node and per client address, counted from the upgrade request to the close. */
  admission: SocketAdmission;
  metrics: EngineMetrics;
  /** Absent: tracing off, calls create no spans. */
  tracer?: Tracer;
  /** The node's connector (one per process); absent without `sql` and `secrets`. */
  connectors?: CallConnectors;
}

/**
 * uWS limits both socket routes share: a socket silent for 60 s is closed, and so is one whose
 * unsent data passes 1 MiB (a stalled client must not hold memory; audio frames are dropped from
 * 512 KiB, see the transports).
 */
export const SOCKET_LIMITS = { idleTimeout: 60, maxBackpressure: 1024 * 1024, closeOnBackpressureLimit: 1 } as const;

/** How long a claimed session stays ours in the registry (a call longer than this is not expected). */
export const CLAIM_TTL_MS = 4 * 60 * 60 * 1000;

/**
 * Pre-warmed providers hold vendor sockets and memory like a call, so they count against the
 * capacity until adopted or expired (issue 11); a session's own pre-warm is its slot.
 */
export function atCapacity(ctx: EngineContext, sessionId: string): boolean {
  const { calls, prewarmed } = ctx;
  return calls.size + prewarmed.size - (prewarmed.has(sessionId) ? 1 : 0) >= ctx.config.engineCapacity;
}

