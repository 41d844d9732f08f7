/**
 * Session start and control routing: the registry is the only shared state, so every operation
 * works from whichever control-plane replica receives it.
 */
import { AppError, type ErrorCode, invalid, notFound } from '../../shared/errors.js';
import { longerThan } from '../http/validate.js';
import { maskSessionId, newSecretId } from '../../shared/ids.js';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { ENGINE_NODES_TOPIC, type EngineNode, FLUSH_ALL, pickNode, REGISTRY_RESTORE_GRACE_MS, RegistryTimeoutError, RegistryUnavailableError, type Registry, type StoredSession } from '../../shared/registry/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { boundConnectionIds, inactiveAgentError, type LiveAgentConfig, type LiveConnections, toAgentLiveView } from './agent-view.js';
import { buildSessionConfig, type StartRequest, validateStartRequest } from './build-config.js';
import { CONNECT_WINDOW_MS, MAX_TEXT_CHARS } from './capabilities.js';
import { Placements } from './placements.js';
import { purgeUnclaimed } from './purge.js';

export interface VoiceSessionsDeps {
  registry: Registry;
  clock: Clock;
  logger: Logger;
  /** The agents domain's published snapshot (secrets decrypted). Throws NOT_FOUND for an unknown agent. */
  liveConfig: (agentId: string, signal?: AbortSignal) => Promise<LiveAgentConfig | undefined | null>;
  /** The connectors domain's live-connection check. Absent: connector tools never reach a call. */
  liveConnections?: LiveConnections;
  /** Connect window of a started session. Default 30 000 (spec Limits). */
  connectWindowMs?: number;
  /** How long text/end wait for the owning node. Default 3000. */
  commandTimeoutMs?: number;
  /** How long a prewarm command may stay in flight (nobody waits on it). Default 2000. */
  prewarmTimeoutMs?: number;
  /** How long one listing of the engine nodes serves session starts. Default NODE_LIST_TTL_MS; 0 lists per start. */
  nodeListTtlMs?: number;
}

/**
 * One listing of the engine nodes (two registry round trips and a parse of every node record)
 * serves the session starts of the next 250 ms instead of each start making its own: heartbeats
 * come every 2 s, so the list is not staler than the loads in it, and this replica's own placements
 * are added to the loads meanwhile (placements.ts). A node that starts draining or leaves publishes
 * ENGINE_NODES_TOPIC, which drops the listing at once on every replica.
 */
export const NODE_LIST_TTL_MS = 250;

export interface StartedSession {
  session_id: string;
  agent_id: string;
  welcome_message: string;
  status: 'active';
  ws_url: string;
  /** The chosen engine node (telephony builds carrier stream URLs from it). */
  node_id: string;
  node_ws_url: string;
  config: SessionConfig;
}


export interface VoiceSessions {
  /** Resolves the published agent, picks a node, stores the config with a connect deadline, prewarms. */
  start(req: StartRequest, signal?: AbortSignal): Promise<StartedSession>;
  /** Feeds text to the LLM of a live session as if the caller had spoken (or as a system message). */
  injectText(sessionId: string, text: unknown, role?: unknown): Promise<{ session_id: string; status: 'injected'; text: string }>;
  /** Ends a live session on its node, or purges a started one that never connected. */
  end(sessionId: string): Promise<{ session_id: string; status: 'ended' }>;
  /** Live engine nodes (readiness). */
  engineNodes(): Promise<EngineNode[]>;
  /** Waits for in-flight prewarm commands. Idempotent. */
  close(): Promise<void>;
}

/** Why no node took a session: none registered, none accepting (draining, records down), or all full. */
export function noNodeReason(nodes: EngineNode[]): string {
  if (nodes.length === 0) return 'no voice engine node is available';
  if (nodes.every((n) => n.draining || n.unavailable)) return 'no voice engine node accepts new sessions (draining or unavailable)';
  return 'all voice engine nodes are at capacity';
}

/** Nodes tried per session start when the chosen one does not serve its commands. */
const MAX_PICKS = 3;

/** Session ids are 24 random bytes in base64url (32 chars); anything far longer is not ours. */
const MAX_SESSION_ID_CHARS = 128;
/** Remote error codes passed through as they are; anything else from a node is a 500. */
const PASSED_CODES = new Set<ErrorCode>(['NOT_FOUND', 'CONFLICT', 'INVALID_REQUEST', 'SERVICE_UNAVAILABLE', 'RATE_LIMITED']);

export function createVoiceSessions(deps: VoiceSessionsDeps): VoiceSessions {
  const connectWindowMs = deps.connectWindowMs ?? CONNECT_WINDOW_MS;
  const commandTimeoutMs = deps.commandTimeoutMs ?? 3000;
  const prewarmTimeoutMs = deps.prewarmTimeoutMs ?? 2000;
  const log = deps.logger.child({ domain: 'voice' });
  const prewarms = new Set<Promise<void>>();
  const placements = new Placements();
  let closed = false;
  const nodeListTtlMs = deps.nodeListTtlMs ?? NODE_LIST_TTL_MS;
  let nodeList: { atMs: number; nodes: Promise<EngineNode[]> } | undefined;
  const unsubscribe = deps.registry.invalidations
    .subscribe((topic) => {
      if (topic === ENGINE_NODES_TOPIC || topic === FLUSH_ALL) nodeList = undefined;
    })
    .catch((err: Error) => {
      log.warn({ err }, 'engine node changes not subscribed: node listings expire after their TTL only');
      return async () => {};
    });

  /** The engine nodes, listed at most once per nodeListTtlMs; starts meanwhile share the listing (and one in flight). */
  function listNodes(): Promise<EngineNode[]> {
    const now = deps.clock.now();
    if (nodeList && now - nodeList.atMs < nodeListTtlMs) return nodeList.nodes;
    const generation = placements.beginListing();
    const nodes = registryCall(() => deps.registry.nodes.listNodes()).then((listed) => {
      placements.noteListing(listed, generation);
      return listed;
    });
    const entry = { atMs: now, nodes };
    nodeList = entry;
    entry.nodes.catch(() => {
      if (nodeList === entry) nodeList = undefined;
    });
    return entry.nodes;
  }

  async function start(req: StartRequest, signal?: AbortSignal): Promise<StartedSession> {
    if (closed) throw new AppError('SERVICE_UNAVAILABLE', 'voice sessions are shutting down');
    validateStartRequest(req);
    const agentId = req.agent_id.trim();
    // The signal reaches the agents domain's Postgres reads; the registry interface takes none.
    const live = await deps.liveConfig(agentId, signal);
    if (!live) throw notFound('agent');
    if (live.is_active === false) throw inactiveAgentError(live.agent_id);
    const sessionId = newSecretId();
    const nowMs = deps.clock.now();
    // Asked now, not at publish: a connection disconnected since then must not reach the call.
    const connectionIds = boundConnectionIds(live);
    const connections = connectionIds.length && deps.liveConnections ? await deps.liveConnections(live.workspace_id, connectionIds, signal) : new Map<string, string>();
    const config = buildSessionConfig(toAgentLiveView(live, connections), { ...req, agent_id: agentId }, { sessionId, nowMs });

    const nodes = await listNodes();
    const node = await placeOnServingNode(nodes, { sessionId, agentId: config.agent_id, nodeId: '', config, createdAtMs: nowMs, connectDeadlineMs: nowMs + connectWindowMs });
    if (!node) {
      const reason = pickNode(nodes.map((n) => placements.withPending(n))) ? 'no listed voice engine node serves its commands (they may have just stopped)' : noNodeReason(nodes);
      throw new AppError('SERVICE_UNAVAILABLE', reason, { retryAfterS: 1 });
    }
    prewarm(node.nodeId, sessionId);
    log.info({ session: maskSessionId(sessionId), agentId: config.agent_id, nodeId: node.nodeId, direction: config.call_direction }, 'voice session started');
    const nodeWsUrl = node.wsUrl.replace(/\/+$/, '');
    return {
      session_id: sessionId,
      agent_id: config.agent_id,
      welcome_message: config.welcome_message,
      status: 'active',
      ws_url: `${nodeWsUrl}/api/v1/voice/ws/${sessionId}`,
      node_id: node.nodeId,
      node_ws_url: nodeWsUrl,
      config,
    };
  }

  /**
   * Stores the session on the least-loaded node that serves its commands now; the node, or
   * undefined when none is left. The placement is counted before any await (so concurrent starts
   * see it). A listed node nobody serves was killed a moment ago (its heartbeat has not lapsed
   * yet): a session placed there would wait for a socket that can never come (an outbound call
   * answered to silence), so it is taken back and the next node tried. The check runs beside the
   * write (no round trip added to a start), at every start, not remembered: a live node whose
   * subscriber is reconnecting (a Redis restart) is passed over only while it is. A registry error
   * on the check counts as serving: the write tells.
   */
  async function placeOnServingNode(nodes: EngineNode[], session: StoredSession): Promise<EngineNode | undefined> {
    const passedOver = new Set<string>();
    for (let attempt = 0; attempt < MAX_PICKS; attempt++) {
      const node = pickNode(nodes.filter((n) => !passedOver.has(n.nodeId)).map((n) => placements.withPending(n)));
      if (!node) return undefined;
      const unplace = placements.add(node.nodeId, deps.clock.now(), session.sessionId);
      const serving = deps.registry.commands.listening(node.nodeId).catch(() => true);
      try {
        await registryCall(() => deps.registry.sessions.putSession({ ...session, nodeId: node.nodeId }));
      } catch (err) {
        unplace();
        throw err;
      }
      if (await serving) return node;
      unplace();
      passedOver.add(node.nodeId);
      await deps.registry.sessions.deleteSession(session.sessionId).catch(() => {});
      log.warn({ nodeId: node.nodeId }, 'engine node listed but not serving its commands (it may have just died): session placed elsewhere');
    }
    return undefined;
  }

  /** Fire and forget: a slow or absent node only loses the head start, never the session. */
  function prewarm(nodeId: string, sessionId: string): void {
    const p = deps.registry.commands
      .sendCommand(nodeId, { kind: 'prewarm', sessionId }, prewarmTimeoutMs)
      .then(
        () => undefined,
        (err: unknown) => log.warn({ session: maskSessionId(sessionId), nodeId, err }, 'prewarm failed'),
      )
      .finally(() => prewarms.delete(p));
    prewarms.add(p);
  }

  /** The node owning a session; 409 when it was started but no socket claimed it yet; 404 when unknown. */
  async function ownerOf(sessionId: string, purgeUnclaimed: boolean): Promise<string | undefined> {
    if (!sessionId || sessionId.length > MAX_SESSION_ID_CHARS) throw notFound('session');
    const owner = await registryCall(() => deps.registry.sessions.sessionOwner(sessionId));
    if (owner) return owner;
    const stored = await registryCall(() => deps.registry.sessions.getSession(sessionId));
    // Just after Redis came back (maybe empty), the engine's claim or the starting replica's
    // session may not be written back yet: a live call would be told it is over (404), or not
    // connected (409), or be purged. Retry instead.
    if (deps.registry.reconnectedWithin?.(REGISTRY_RESTORE_GRACE_MS)) {
      throw new RegistryUnavailableError('restoring its entries after a reconnect; retry');
    }
    if (!stored) throw notFound('session');
    if (!purgeUnclaimed) throw new AppError('CONFLICT', 'no socket connected to this session yet');
    return undefined;
  }

  async function injectText(sessionId: string, text: unknown, role: unknown = 'user') {
    if (typeof text !== 'string' || text.trim() === '') throw invalid('text', 'is required');
    if (longerThan(text, MAX_TEXT_CHARS)) throw invalid('text', `must be at most ${MAX_TEXT_CHARS} characters`);
    const r = role === undefined || role === null || role === '' ? 'user' : role;
    if (r !== 'user' && r !== 'system') throw invalid('role', 'must be one of user, system');
    const owner = (await ownerOf(sessionId, false))!;
    try {
      await deps.registry.commands.sendCommand(owner, { kind: 'text', sessionId, payload: { text, role: r } }, commandTimeoutMs);
    } catch (err) {
      throw await commandError(err, owner, sessionId);
    }
    return { session_id: sessionId, status: 'injected' as const, text };
  }

  async function end(sessionId: string) {
    const owner = await ownerOf(sessionId, true);
    if (!owner) {
      // Started but never connected: purge now instead of waiting out the connect window (its
      // node drops what it pre-warmed). Gone meanwhile (purged elsewhere): ended all the same.
      const stored = await registryCall(() => deps.registry.sessions.getSession(sessionId));
      if (stored) await registryCall(() => purgeUnclaimed(deps.registry, stored, 'ended_by_api', { commandTimeoutMs, log }));
      // Placed by this replica and not yet in a heartbeat: its slot is free again now.
      placements.forget(sessionId);
      log.info({ session: maskSessionId(sessionId) }, 'unconnected voice session purged');
      return { session_id: sessionId, status: 'ended' as const };
    }
    try {
      await deps.registry.commands.sendCommand(owner, { kind: 'end', sessionId }, commandTimeoutMs);
      placements.forget(sessionId);
    } catch (err) {
      const mapped = await commandError(err, owner, sessionId);
      // The owner no longer knows the session: the registry entry is stale.
      if (mapped.code === 'NOT_FOUND' && !(err instanceof RegistryTimeoutError)) await deps.registry.sessions.deleteSession(sessionId).catch(() => {});
      throw mapped;
    }
    return { session_id: sessionId, status: 'ended' as const };
  }

  async function commandError(err: unknown, nodeId: string, sessionId: string): Promise<AppError> {
    if (err instanceof RegistryTimeoutError) {
      // A node still heartbeating is alive but unreachable for a moment (its command
      // subscription reconnecting after a Redis restart, issue 23): retry, its call is still up.
      // A node gone from the registry died: for the caller the live session is gone.
      const listed = await deps.registry.nodes.listNodes().then(
        (nodes) => nodes.some((n) => n.nodeId === nodeId),
        () => false,
      );
      log.warn({ session: maskSessionId(sessionId), nodeId, listed }, 'session owner did not answer');
      return listed ? new AppError('SERVICE_UNAVAILABLE', 'the engine node of this session did not answer; retry', { retryAfterS: 1 }) : notFound('session');
    }
    // Our own errors (a registry outage is already a 503 with Retry-After) pass unchanged.
    if (err instanceof AppError) return err;
    const code = (err as { code?: unknown })?.code;
    const message = (err as Error)?.message ?? 'session command failed';
    if (typeof code === 'string' && PASSED_CODES.has(code as ErrorCode)) {
      if (code === 'NOT_FOUND') return notFound('session');
      // The owning actor refused injected text: its per-call budget refills at one per second.
      const retryAfterS = code === 'RATE_LIMITED' || code === 'SERVICE_UNAVAILABLE' ? 1 : undefined;
      return new AppError(code as ErrorCode, message, retryAfterS ? { retryAfterS } : undefined);
    }
    return new AppError('INTERNAL', 'session command failed', { cause: err });
  }

  return {
    start,
    injectText,
    end,
    engineNodes: () => registryCall(() => deps.registry.nodes.listNodes()),
    async close() {
      closed = true;
      await Promise.allSettled([...prewarms]);
      await (await unsubscribe)();
    },
  };
}

/** Registry outages are 503 (retryable), not 500. */
async function registryCall<T>(fn: () => Promise<T>): Promise<T> {
  try {
    return await fn();
  } catch (err) {
    if (err instanceof AppError) throw err;
    throw new AppError('SERVICE_UNAVAILABLE', 'session registry unavailable', { cause: err, retryAfterS: 1 });
  }
}
