/**
 * The registry: where control planes and media-engine nodes meet. Six small parts (node presence,
 * session claims, command RPC, live calls and seats, rate-limit windows, cache invalidations), each with two
 * implementations under one contract (tested by the same suites): Redis for many replicas,
 * in-process for the single-node embedded default. Nothing here is touched per audio frame.
 */

import { AppError } from '../errors.js';
import type { HealthReport } from '../process-health.js';

export interface EngineNode {
  nodeId: string;
  /** Public WebSocket base, e.g. wss://media-1.example.com */
  wsUrl: string;
  /** Max concurrent calls this node accepts. */
  capacity: number;
  /** Current live calls. */
  load: number;
  /** Epoch ms of the last heartbeat. */
  updatedAtMs: number;
  /**
   * The node's process health at this heartbeat (issue 17): the control plane's collector job
   * copies it into `system_health`, so the engine never writes Postgres. Absent from older nodes.
   */
  health?: HealthReport;
  /**
   * The node is draining (SIGTERM, issue 23): it keeps its live calls until they end but takes no
   * new sessions, so `pickNode` skips it. It still heartbeats: its calls are not lost.
   */
  draining?: boolean;
  /**
   * The node cannot do its work now (its conversation records have not reached Postgres for
   * RECORDS_UNAVAILABLE_AFTER_MS): `pickNode` skips it until a heartbeat says otherwise.
   */
  unavailable?: boolean;
}

export interface StoredSession {
  sessionId: string;
  agentId: string;
  /** The node chosen at start; the socket is expected there. */
  nodeId: string;
  /** Resolved, self-contained session config (published agent version, overrides applied). */
  config: unknown;
  createdAtMs: number;
  /** After this, an unclaimed session is purged. */
  connectDeadlineMs: number;
}

export type ClaimResult = { status: 'claimed'; session: StoredSession } | { status: 'taken'; ownerNodeId: string } | { status: 'not_found' };

/** A control command routed to the node that owns a session. */
export interface NodeCommand {
  kind: string;
  sessionId?: string;
  payload?: unknown;
}

export type CommandHandler = (cmd: NodeCommand) => Promise<unknown>;

/**
 * A live carrier call (telephony). The registry keeps it for every replica (not per process) with
 * three indexes: by owner (lists), by seat pool (concurrency caps) and by carrier call id.
 */
export interface StoredCall {
  callId: string;
  /** Owner: lists and lookups are fenced per user. */
  userId: string;
  /** Seat pool the call occupies (the workspace). */
  poolId: string;
  /** The carrier's id of the call, indexed once known. */
  providerCallSid?: string;
  /** The call record itself (flat JSON fields), merged by `patchCall`. */
  data: Record<string, unknown>;
  createdAtMs: number;
  /** Safety net: the entry and its index entries vanish after this even if nobody ends the call. */
  expiresAtMs: number;
}

/** Engine node presence: heartbeats with a TTL, read by the control plane to place sessions. */
export interface NodeDirectory {
  /** Registers or refreshes a node; its entry expires `ttlMs` after the last call. */
  heartbeat(node: EngineNode, ttlMs: number): Promise<void>;
  removeNode(nodeId: string): Promise<void>;
  /** Live (unexpired) nodes. */
  listNodes(): Promise<EngineNode[]>;
}

/** Started voice sessions (config until the connect deadline) and the owner claim of each. */
export interface SessionStore {
  /** Stores a started session until its connect deadline. */
  putSession(session: StoredSession): Promise<void>;
  getSession(sessionId: string): Promise<StoredSession | undefined>;
  /** Atomically claims an unclaimed session for `nodeId` (first claim wins; the claim is idempotent for the owner). */
  claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult>;
  /** Owner of a claimed session, if any. */
  sessionOwner(sessionId: string): Promise<string | undefined>;
  /** Forgets a session (ended). */
  deleteSession(sessionId: string): Promise<void>;
  /**
   * Moves an unclaimed session's connect deadline later (never earlier), atomically: a session that
   * is gone (ended, expired) or claimed meanwhile is left as it is, never brought back. True when
   * the deadline moved.
   */
  extendConnectDeadline(sessionId: string, deadlineMs: number): Promise<boolean>;
  /**
   * Sessions placed on `nodeId` that still wait for their socket (unclaimed, before their connect
   * deadline), latest deadline first, at most MAX_PENDING_LISTED: calls on their way to that node.
   * A draining node waits for them (an outbound call's stream may come a whole ring later), minus
   * those it knows ended: after Redis came back empty, the replica that started a session writes it
   * again from its journal even if it ended meanwhile on another process.
   */
  pendingOn(nodeId: string): Promise<string[]>;
}

/** Most session ids one `pendingOn` lists. */
export const MAX_PENDING_LISTED = 200;

/** Request/reply commands to the node that owns a session (`/text`, `/end`, AMD verdicts, ...). */
export interface CommandBus {
  /** Serves commands addressed to `nodeId` (one handler per node). */
  serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>>;
  /** Sends a command to a node and waits for its reply (rejects with RegistryTimeoutError). */
  sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown>;
  /**
   * Whether anyone serves `nodeId`'s commands now. A node killed a moment ago is still listed
   * until its heartbeat lapses (seconds), but nobody listens on its command channel any more.
   */
  listening(nodeId: string): Promise<boolean>;
}

/** Live carrier calls for every replica, with their seats (concurrency per pool) and sid index. */
export interface LiveCallStore {
  /**
   * Stores a live call. With `seatLimit` > 0 the call takes a seat in its pool atomically and the
   * put is refused (false) when the pool already holds that many live calls.
   */
  putCall(call: StoredCall, opts?: { seatLimit?: number }): Promise<boolean>;
  getCall(callId: string): Promise<StoredCall | undefined>;
  findCallBySid(providerCallSid: string): Promise<StoredCall | undefined>;
  /** Merges `data` into a live call (never recreates an ended one); `providerCallSid` adds the index. */
  patchCall(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined>;
  /**
   * `patchCall` only while the call's `field` is empty ('', null or absent), in one step: of two
   * concurrent claims (two transfers of one call) exactly one applies. 'taken': the field holds a
   * value (nothing written); undefined: the call is gone.
   */
  patchCallIfEmpty(callId: string, field: string, data: Record<string, unknown>): Promise<StoredCall | 'taken' | undefined>;
  /** Removes a call and its index entries; returns it only to the caller that removed it. */
  deleteCall(callId: string): Promise<StoredCall | undefined>;
  /** Live calls of an owner (`userId`) or of a seat pool (`poolId`), oldest first. */
  listCalls(by: { userId: string } | { poolId: string }): Promise<StoredCall[]>;
  /**
   * This process keeps the live call's record too, and writes it again after Redis comes back
   * empty, until `releaseCall` or the call's end anywhere. The engine node carrying a call's media
   * adopts it: the record then outlives the control plane that placed it (a rolling deploy,
   * issue 23). A call not found is not adopted. No-op in the in-process registry.
   */
  adoptCall(callId: string): Promise<void>;
  releaseCall(callId: string): void;
}

/** Fixed-window counters for rate limits shared by every replica. */
export interface RateLimitWindows {
  /** Counts one hit in the window of `key`: returns the count within the window. */
  incrWindow(key: string, windowMs: number): Promise<number>;
}

/** `topic` names the kind of thing that changed (`agent`, `session`, ...), `key` which one. */
export type InvalidationHandler = (topic: string, key: string) => void;

/**
 * Topic (and key) of the notice a subscriber gets when notices may have been lost (its Redis
 * subscription came back after a disconnect): drop everything cached.
 */
export const FLUSH_ALL = '*';
/** Published (key: the node id) by an engine node that starts draining or leaves: control planes drop their node listing. */
export const ENGINE_NODES_TOPIC = 'engine-nodes';

/**
 * Change notices for the control plane's in-process read caches, to every replica. At most once,
 * best effort: a notice sent while Redis is unreachable is lost, so every cache keeps a TTL as the
 * bound (docs/caching.md). The publishing instance's own subscribers get the notice at once,
 * before `publish` resolves, whether or not it could be sent.
 */
export interface InvalidationBus {
  /** Resolves true once sent to every replica, false when it could not be sent (logged); never rejects. */
  publish(topic: string, key: string): Promise<boolean>;
  /** Calls `handler` for every notice of every instance (own included; FLUSH_ALL after a lost subscription). */
  subscribe(handler: InvalidationHandler): Promise<() => Promise<void>>;
}

/**
 * A workspace's credit state as the control plane last published it (docs/billing.md): what an
 * engine node reads, once, when a socket connects (it never queries Postgres).
 */
export interface BillingState {
  /** Ledger balance in micro-credits (the sum of the workspace's ledger rows). */
  balanceMicros: number;
  /** Price of one second of call audio in micro-credits; 0: calls are not priced by time. */
  perSecondMicros: number;
  /** Epoch ms of the publication. */
  updatedAtMs: number;
}

/** Published credit states per workspace (BILLING_ENABLED). No expiry: the last publication stands. */
export interface BillingStates {
  putBillingState(workspaceId: string, state: BillingState): Promise<void>;
  /** Undefined: never published (treated as an empty balance). */
  getBillingState(workspaceId: string): Promise<BillingState | undefined>;
}

/**
 * The parts bundled for wiring, over one connection (Redis: one client pair and one replay
 * journal; in-process: one clock and one sweep). Consumers take the part they need.
 */
/**
 * After the registry reconnects (Redis may be back empty), how long a missing session, claim or
 * call is taken for "not written back yet" rather than gone: every process reconnects within its
 * backoff (at most 2 s) and replays what it owns in one round trip.
 */
export const REGISTRY_RESTORE_GRACE_MS = 5000;

export interface Registry {
  readonly kind: 'redis' | 'memory';
  readonly nodes: NodeDirectory;
  readonly sessions: SessionStore;
  readonly commands: CommandBus;
  readonly calls: LiveCallStore;
  readonly windows: RateLimitWindows;
  readonly invalidations: InvalidationBus;
  readonly billing: BillingStates;
  /**
   * Whether the store reconnected within the last `ms` (monotonic time): Redis may have come back
   * empty, and the other processes' replays (their sessions, claims, calls) may not have landed
   * yet, so a missing entry may only be missing for a moment. Absent or false: no reconnect.
   */
  reconnectedWithin?(ms: number): boolean;
  close(): Promise<void>;
}

/**
 * The registry store (Redis) is down, reconnecting or too slow: a retryable 503 with Retry-After
 * wherever it surfaces (it is an AppError, so every edge maps it without knowing the registry).
 */
export class RegistryUnavailableError extends AppError {
  constructor(reason: string, cause?: unknown) {
    super('SERVICE_UNAVAILABLE', `session registry unavailable: ${reason}`, { cause, retryAfterS: 1 });
  }
}

export class RegistryTimeoutError extends Error {
  constructor(nodeId: string) {
    super(`node ${nodeId} did not answer in time`);
    this.name = 'RegistryTimeoutError';
  }
}

export class RemoteCommandError extends Error {
  constructor(
    message: string,
    readonly code: string,
  ) {
    super(message);
    this.name = 'RemoteCommandError';
  }
}

/** Least-loaded live node with free capacity that is not draining (ties: lowest load ratio, then id for determinism). */
export function pickNode(nodes: EngineNode[]): EngineNode | undefined {
  let best: EngineNode | undefined;
  for (const n of nodes) {
    if (n.load >= n.capacity || n.draining || n.unavailable) continue;
    if (!best) {
      best = n;
      continue;
    }
    const a = n.load / n.capacity;
    const b = best.load / best.capacity;
    if (a < b || (a === b && n.nodeId < best.nodeId)) best = n;
  }
  return best;
}
