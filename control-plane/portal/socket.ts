/**
 * The presence socket `GET /api/v1/sessions/ws` (spec doc 3 "Sessions"; protocol in
 * docs/portal.md "Presence socket"). Served by the control plane's own HTTP listener through the
 * `ws` package (no second port; presence is control-plane state in Postgres, so any replica can
 * hold any agent's socket).
 *
 * The upgrade carries no authentication (spec); the first message must be
 * `{"type":"login","token":...}` with a portal token from `POST /api/v1/agent-portal/login`,
 * within LOGIN_TIMEOUT_MS (another message type first, or a bad token: an `UNAUTHORIZED` error
 * frame and close 4001 at once). Then: `status`, `heartbeat`, `logout`. A socket silent for
 * PORTAL_HEARTBEAT_TIMEOUT_S is closed here (4008) and the agent goes offline; if this process
 * dies instead, the sweep job does the same from `last_heartbeat_at` (sweep.ts).
 *
 * Bounds: 16 KiB per message, 20 messages per second per socket (then 1008), one session per
 * agent (a newer login replaces the older one, whose next message or heartbeat ends it: 4009).
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import { WebSocketServer, type WebSocket } from 'ws';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { isUuid } from '../../shared/ids.js';
import { STATUSES, type PresenceStatus } from './attendance.js';
import type { Credentials } from './credentials.js';
import type { Presence } from './presence.js';
import type { TokenBuckets } from './rate-limit.js';
import type { Handoff, Offer } from './handoff.js';

export const SOCKET_PATH = '/api/v1/sessions/ws';
const LOGIN_TIMEOUT_MS = 10_000;
const MAX_MESSAGE_BYTES = 16 * 1024;
const MAX_MESSAGES_PER_S = 20;
const MAX_REMEMBERED_OFFERS = 1000;
/** Statuses an agent may set itself (`offline` is `logout`). */
const SETTABLE: readonly PresenceStatus[] = STATUSES.filter((s) => s !== 'offline');

export interface PresenceSocketDeps {
  clock: Clock;
  logger: Logger;
  credentials: Credentials;
  presence: Presence;
  buckets: TokenBuckets;
  heartbeatTimeoutS: number;
  handoff: Handoff;
}

export interface LiveAgentSocket {
  agentId: string;
  sessionId: string;
  /** Sends an offer once per socket (the bus and the heartbeat re-send may both deliver it). */
  offer(o: Offer): void;
  /** The session ended elsewhere (a password change, a deactivation): SESSION_ENDED, close 4009 now. */
  sessionEnded(): void;
}

export interface PresenceSockets {
  /** For the server's `upgrade` event: true when the request was ours. */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): boolean;
  /** Sockets of this process by agent id (call offers are sent through them). */
  local: Map<string, LiveAgentSocket>;
  close(): Promise<void>;
}

export function createPresenceSockets(deps: PresenceSocketDeps): PresenceSockets {
  const { clock, logger, presence } = deps;
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_MESSAGE_BYTES });
  const local = new Map<string, LiveAgentSocket>();
  const heartbeatMs = deps.heartbeatTimeoutS * 1000;

  function serve(ws: WebSocket, ip: string): void {
    let agentId = '';
    let sessionId = '';
    let ended = false;
    let timer: TimerHandle | undefined;
    let windowStart = clock.monotonicMs();
    let inWindow = 0;
    // Messages are handled one at a time, in order (a status change never overtakes a login).
    let chain: Promise<void> = Promise.resolve();
    const send = (msg: Record<string, unknown>) => {
      if (ws.readyState === ws.OPEN) ws.send(JSON.stringify(msg));
    };
    /** The last message of a logged-in socket: a silent one's session ends there, as the sweep's does. */
    let lastSeenMs = 0;
    const arm = (ms: number, reason: string) => {
      clock.clearTimeout(timer);
      if (reason === 'heartbeat_timeout') lastSeenMs = clock.now();
      timer = clock.setTimeout(() => void end(reason, 4008, 'heartbeat timeout'), ms);
    };
    async function end(reason: string, code: number, text: string): Promise<void> {
      if (ended) return;
      ended = true;
      clock.clearTimeout(timer);
      if (local.get(agentId)?.sessionId === sessionId) local.delete(agentId);
      if (ws.readyState === ws.OPEN) ws.close(code, text);
      const atMs = reason === 'heartbeat_timeout' && lastSeenMs ? lastSeenMs : undefined;
      if (sessionId) await presence.logout(agentId, sessionId, reason, 'socket', atMs).catch((err: Error) => logger.warn({ err, agentId }, 'presence logout failed (the sweep will close it)'));
    }
    const fail = (code: string, message: string) => send({ type: 'error', code, message });
    // Offers this socket has sent (the bus and the heartbeat's re-send may both deliver one); the
    // oldest forgotten past MAX_REMEMBERED_OFFERS, long expired by then (20 s each).
    const offered = new Set<string>();
    const offer = (o: Offer) => {
      if (offered.has(o.offer_id)) return;
      if (offered.size >= MAX_REMEMBERED_OFFERS) offered.delete(offered.values().next().value as string);
      offered.add(o.offer_id);
      send({ type: 'offer', ...o });
    };
    /** An id field of a client message: a string UUID, else the error frame (true: refused). */
    const badId = (field: 'offer_id' | 'call_id', v: unknown): boolean => {
      if (v === undefined || v === '') return fail('INVALID_REQUEST', `${field} is required`), true;
      if (typeof v !== 'string' || !isUuid(v)) return fail('INVALID_REQUEST', `${field} must be a UUID`), true;
      return false;
    };

    async function handle(raw: string): Promise<void> {
      let msg: { type?: unknown; token?: unknown; status?: unknown; offer_id?: unknown; call_id?: unknown };
      try {
        msg = JSON.parse(raw);
      } catch {
        msg = undefined as never;
      }
      if (!msg || typeof msg !== 'object') {
        // Before the login, as any other message that is not a login: refused and closed.
        if (!sessionId) {
          fail('UNAUTHORIZED', 'send {"type":"login","token":...} first');
          return void end('login_required', 4001, 'unauthorized');
        }
        return fail('INVALID_BODY', 'messages are JSON objects');
      }
      if (!sessionId) {
        // Anything but a login before the login: the error frame, then close 4001 at once (as a
        // bad token), so an unauthenticated socket is never held open until the login timeout.
        if (msg.type !== 'login') {
          fail('UNAUTHORIZED', 'send {"type":"login","token":...} first');
          return void end('login_required', 4001, 'unauthorized');
        }
        const agent = typeof msg.token === 'string' ? await deps.credentials.agentForToken(msg.token) : undefined;
        if (!agent) {
          fail('UNAUTHORIZED', 'invalid or expired portal token');
          return void end('login_failed', 4001, 'unauthorized');
        }
        const r = await presence.login(agent.id, ip, 'socket');
        agentId = agent.id;
        sessionId = r.sessionId;
        if (ended) return void presence.logout(agentId, sessionId, 'disconnect', 'socket').catch(() => undefined);
        local.set(agentId, { agentId, sessionId, offer, sessionEnded: () => void (chain = chain.then(() => (sessionId ? replaced() : undefined))) });
        arm(heartbeatMs, 'heartbeat_timeout');
        return send({ type: 'ready', agent_id: agentId, session_id: sessionId, status: r.status, heartbeat_interval_s: Math.max(1, Math.floor(deps.heartbeatTimeoutS / 3)), heartbeat_timeout_s: deps.heartbeatTimeoutS });
      }
      arm(heartbeatMs, 'heartbeat_timeout');
      switch (msg.type) {
        case 'heartbeat':
          if (!(await presence.heartbeat(agentId, sessionId))) return replaced();
          send({ type: 'heartbeat_ack', at: new Date(clock.now()).toISOString() });
          // The offer notice is best effort across replicas: open offers are repeated here.
          for (const o of await deps.handoff.pendingFor(agentId)) offer(o);
          return;
        case 'offer.accept': {
          if (badId('offer_id', msg.offer_id)) return;
          const r = await deps.handoff.accept(msg.offer_id as string, agentId, sessionId);
          if (!r) return fail('NOT_FOUND', 'no open offer with this offer_id for you (taken, expired or declined)');
          if ('error' in r) return send({ type: 'call.failed', offer_id: msg.offer_id, message: r.error });
          return send({ type: 'call.connected', offer_id: msg.offer_id, call_id: r.callId, conversation_id: r.conversationId });
        }
        case 'offer.decline':
          if (badId('offer_id', msg.offer_id)) return;
          if (!(await deps.handoff.decline(msg.offer_id as string, agentId))) return fail('NOT_FOUND', 'no open offer with this offer_id for you');
          return send({ type: 'offer.declined', offer_id: msg.offer_id });
        case 'call.end':
          if (badId('call_id', msg.call_id)) return;
          if (!(await deps.handoff.end(msg.call_id as string, agentId))) return fail('NOT_FOUND', 'you have no connected call with this call_id');
          return send({ type: 'call.ended', call_id: msg.call_id });
        case 'status': {
          const status = msg.status as PresenceStatus;
          if (!SETTABLE.includes(status)) return fail('INVALID_REQUEST', `status must be one of ${SETTABLE.join(', ')} (offline: send logout)`);
          if (!(await presence.setStatus(agentId, sessionId, status, 'socket'))) return replaced();
          return send({ type: 'status', status, at: new Date(clock.now()).toISOString() });
        }
        case 'logout':
          send({ type: 'bye' });
          return end('logout', 1000, 'logout');
        default:
          return fail('INVALID_REQUEST', 'unknown message type');
      }
    }

    function binary(): void {
      if (!sessionId) {
        fail('UNAUTHORIZED', 'send {"type":"login","token":...} first (a text frame)');
        return void end('login_required', 4001, 'unauthorized');
      }
      fail('INVALID_BODY', 'text frames only');
    }

    function replaced(): Promise<void> {
      const sid = sessionId;
      sessionId = '';
      fail('SESSION_ENDED', 'this presence session ended (a newer login, a timeout, a password change or deactivation)');
      if (local.get(agentId)?.sessionId === sid) local.delete(agentId);
      return end('replaced', 4009, 'session ended');
    }

    arm(LOGIN_TIMEOUT_MS, 'login_timeout');
    ws.on('message', (data, isBinary) => {
      const now = clock.monotonicMs();
      if (now - windowStart >= 1000) {
        windowStart = now;
        inWindow = 0;
      }
      if (++inWindow > MAX_MESSAGES_PER_S) return void end('disconnect', 1008, 'too many messages');
      // A binary frame is no login: before one it closes the socket (4001) as any other frame
      // would; after, it is refused and the session goes on. In order with the frames before it.
      chain = chain.then(() => (isBinary ? binary() : handle(String(data)))).catch((err: Error) => {
        logger.warn({ err, agentId }, 'presence socket message failed');
        fail('INTERNAL', 'the message could not be handled');
      });
    });
    ws.on('close', () => {
      chain = chain.then(() => end('disconnect', 1000, ''));
    });
    ws.on('error', () => ws.terminate());
  }

  return {
    local,
    handleUpgrade(req, socket, head) {
      const path = (req.url ?? '').split('?')[0];
      if (path !== SOCKET_PATH && path !== SOCKET_PATH + '/') return false;
      const ip = req.socket.remoteAddress ?? 'unknown';
      try {
        deps.buckets.take(ip);
      } catch {
        socket.end('HTTP/1.1 429 Too Many Requests\r\nretry-after: 1\r\nconnection: close\r\n\r\n');
        return true;
      }
      wss.handleUpgrade(req, socket, head, (ws) => serve(ws, ip));
      return true;
    },
    async close() {
      for (const c of wss.clients) c.terminate();
      await new Promise<void>((resolve) => wss.close(() => resolve()));
    },
  };
}
