/**
 * The session registry: where control planes and media-engine nodes meet. Two implementations with
 * one contract (tested by the same suite): Redis for many replicas, in-process for the single-node
 * embedded default. Nothing here is touched per audio frame.
 */

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

export interface SessionRegistry {
  readonly kind: 'redis' | 'memory';

  /** Registers or refreshes a node; its entry expires `ttlMs` after the last call. */
  heartbeat(node: EngineNode, ttlMs: number): Promise<void>;
  removeNode(nodeId: string): Promise<void>;
  /** Live (unexpired) nodes. */
  listNodes(): Promise<EngineNode[]>;

  /** Stores a started session until its connect deadline. */
  putSession(session: StoredSession): Promise<void>;
  getSession(sessionId: string): Promise<StoredSession | undefined>;
  /** Atomically claims an unclaimed session for `nodeId` (first claim wins; the claim is idempotent for the owner). */
  claimSession(sessionId: string, nodeId: string, ttlMs: number): Promise<ClaimResult>;
  /** Owner of a claimed session, if any. */
  sessionOwner(sessionId: string): Promise<string | undefined>;
  /** Forgets a session (ended). */
  deleteSession(sessionId: string): Promise<void>;

  /** Serves commands addressed to `nodeId` (one handler per node). */
  serveCommands(nodeId: string, handler: CommandHandler): Promise<() => Promise<void>>;
  /** Sends a command to a node and waits for its reply (rejects with RegistryTimeoutError). */
  sendCommand(nodeId: string, cmd: NodeCommand, timeoutMs: number): Promise<unknown>;

  /**
   * Stores a live call. With `seatLimit` > 0 the call takes a seat in its pool atomically and the
   * put is refused (false) when the pool already holds that many live calls.
   */
  putCall(call: StoredCall, opts?: { seatLimit?: number }): Promise<boolean>;
  getCall(callId: string): Promise<StoredCall | undefined>;
  findCallBySid(providerCallSid: string): Promise<StoredCall | undefined>;
  /** Merges `data` into a live call (never recreates an ended one); `providerCallSid` adds the index. */
  patchCall(callId: string, data: Record<string, unknown>, providerCallSid?: string): Promise<StoredCall | undefined>;
  /** Removes a call and its index entries; returns it only to the caller that removed it. */
  deleteCall(callId: string): Promise<StoredCall | undefined>;
  /** Live calls of an owner (`userId`) or of a seat pool (`poolId`), oldest first. */
  listCalls(by: { userId: string } | { poolId: string }): Promise<StoredCall[]>;

  /** Fixed-window counter for rate limits: returns the count within the window. */
  incrWindow(key: string, windowMs: number): Promise<number>;

  close(): Promise<void>;
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

/** Least-loaded live node with free capacity (ties: lowest load ratio, then id for determinism). */
export function pickNode(nodes: EngineNode[]): EngineNode | undefined {
  let best: EngineNode | undefined;
  for (const n of nodes) {
    if (n.load >= n.capacity) continue;
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
