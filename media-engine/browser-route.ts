/**
 * The browser socket route (`/api/v1/voice/ws/{session_id}`, PCM): admission at the upgrade, then
 * the session is claimed on the open socket (failures become the spec's error frame), then one
 * call per socket.
 *
 * The upgrade is synchronous on purpose. uWebSockets.js 20.30 (the newest build that loads on
 * glibc 2.36) has a bug in the asynchronous upgrade (`res.cork(() => res.upgrade(...))` after an
 * await): the socket's memory is shrunk in place, `cork()` then reads the old HTTP state from
 * freed memory and, depending on what the allocator put there, shuts the new WebSocket down right
 * after `open` (the client sees 1006, no close frame). Upstream fixed it in uNetworking/uWebSockets
 * PR #1929; we measured about 1 in 20-60 sockets dropped under back-to-back connects. Uncorked
 * async upgrades avoid it but print a warning per socket, so the claim moved behind `open`.
 */
import { INSUFFICIENT_BALANCE, parseClientMessage, SESSION_IN_USE, SOCKET_ERRORS } from '../shared/protocol/voice-socket.js';
import type { TimerHandle } from '../shared/clock.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import type { VadProfile } from './audio/vad.js';
import { CLAIM_TTL_MS, SOCKET_LIMITS, type EngineContext } from './engine-context.js';
import { creditAtConnect, type CreditVerdict } from './credit-check.js';
import type { CallActor } from './session/actor.js';
import { startCall } from './start-call.js';
import { BrowserTransport } from './transports/browser.js';
import { addressKey, refuseUpgrade } from './transports/socket-admission.js';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket } from './uws.js';
import { maskSessionId } from '../shared/ids.js';

/** Close code when the session claim did not finish within SOCKET_START_TIMEOUT_MS (try again later). */
const CLOSE_TRY_AGAIN_LATER = 1013;
/** Largest client message we take: 2 s of 16 kHz PCM, far above any audio frame or control message. */
export const MAX_CLIENT_MESSAGE_BYTES = 64 * 1024;
/**
 * What uWS itself accepts. Past it uWS drops the connection without a close frame (the client sees
 * 1006 and no reason), so it sits above our own limit: a message between the two gets the error
 * frame and close 1009 (message too big); only one past this still gets 1006.
 */
const WIRE_MESSAGE_LIMIT_BYTES = 256 * 1024;
const CLOSE_MESSAGE_TOO_BIG = 1009;

interface SocketData {
  /** The admission slot this socket holds (released on close). */
  addressKey: string;
  sessionId: string;
  profile: VadProfile;
  /** Set by the close handler: a claim that finishes afterwards gives the session back. */
  closed: boolean;
  actor?: CallActor;
  /** The actor's `onAudio`, bound once per socket (not a closure per message). */
  onFrame?: (frame: Int16Array) => void;
  transport?: BrowserTransport;
}

interface Claim {
  status: 'claimed' | 'not_found' | 'taken' | 'error' | 'timeout';
  config?: SessionConfig;
  /** The workspace's credit at connect (BILLING_ENABLED), read with the claim. */
  credit?: CreditVerdict;
}

export function registerBrowserRoute(app: TemplatedApp, ctx: EngineContext): void {
  const { config, logger, clock, registry, nodeId, calls, admission } = ctx;

  /** Claims the session for this node (bounded by the start timeout) and reads the credit state. */
  const claim = async (sessionId: string): Promise<Claim> => {
    let timer: TimerHandle | undefined;
    const deadline = new Promise<Claim>((resolve) => {
      timer = clock.setTimeout(() => resolve({ status: 'timeout' }), config.socketStartTimeoutMs);
    });
    const work = (async (): Promise<Claim> => {
      const result = await registry.sessions.claimSession(sessionId, nodeId, CLAIM_TTL_MS);
      if (result.status !== 'claimed') return { status: result.status };
      const cfg = result.session.config as SessionConfig;
      return { status: 'claimed', config: cfg, credit: await creditAtConnect(ctx, cfg) };
    })().catch((err: Error): Claim => {
      logger.error({ err, session: maskSessionId(sessionId) }, 'session claim failed');
      return { status: 'error' };
    });
    const first = await Promise.race([work, deadline]);
    clock.clearTimeout(timer);
    // A claim that lands after the deadline is given back, or the session would look taken.
    if (first.status === 'timeout') void work.then((late) => late.status === 'claimed' && giveBack(sessionId));
    return first;
  };
  const giveBack = (sessionId: string) => void registry.sessions.deleteSession(sessionId).catch(() => {});

  app.ws<SocketData>('/api/v1/voice/ws/:sessionId', {
    maxPayloadLength: WIRE_MESSAGE_LIMIT_BYTES,
    ...SOCKET_LIMITS,
    upgrade: (res: HttpResponse, req: HttpRequest, context) => {
      const addr = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
      const verdict = admission.admit(addr);
      if (verdict !== 'ok') return refuseUpgrade(res, verdict);
      const data: SocketData = {
        addressKey: addr,
        sessionId: req.getParameter(0) ?? '',
        profile: profileFrom(new URLSearchParams(req.getQuery() ?? '')),
        closed: false,
      };
      res.upgrade(data, req.getHeader('sec-websocket-key'), req.getHeader('sec-websocket-protocol'), req.getHeader('sec-websocket-extensions'), context);
    },
    open: (ws: WebSocket<SocketData>) => {
      const data = ws.getUserData();
      const transport = new BrowserTransport(ws as never, clock);
      data.transport = transport;
      const refuse = (message: string, extra: Record<string, unknown> = {}, code = 1008) => {
        transport.sendEvent({ type: 'error', message, fatal: true, ...extra } as never);
        transport.close(code, message);
      };
      void claim(data.sessionId).then((c) => {
        if (data.closed) {
          // The caller left while we claimed: give a claimed session back.
          if (c.status === 'claimed') giveBack(data.sessionId);
          return;
        }
        if (c.status === 'timeout') return refuse('session claim timed out, try again', {}, CLOSE_TRY_AGAIN_LATER);
        // One session, one socket: a second socket for a live call is told so (it was told "not found").
        if (c.status === 'taken' || (c.status === 'claimed' && c.config && calls.has(c.config.session_id))) return refuse(SOCKET_ERRORS.sessionInUse, { code: SESSION_IN_USE });
        if (c.status !== 'claimed' || !c.config) return refuse(SOCKET_ERRORS.sessionNotFound);
        if (c.credit?.ok === false) {
          // The session is spent: after a top-up the client starts a new one.
          giveBack(data.sessionId);
          return refuse(SOCKET_ERRORS.insufficientBalance, { code: INSUFFICIENT_BALANCE });
        }
        startCall(ctx, c.config, {
          allowanceMs: c.credit?.ok ? c.credit.allowanceMs : undefined,
          kind: 'browser',
          transport,
          profile: data.profile,
          refuse: (message, code) => refuse(message, code ? { code } : {}),
          bind: (actor) => {
            data.actor = actor;
            data.onFrame = (frame) => actor.onAudio(frame);
          },
        });
      });
    },
    message: (ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean) => {
      const data = ws.getUserData();
      if (message.byteLength > MAX_CLIENT_MESSAGE_BYTES) {
        const text = `message of ${message.byteLength} bytes: the most is ${MAX_CLIENT_MESSAGE_BYTES}`;
        data.transport?.sendEvent({ type: 'error', message: text, fatal: true } as never);
        data.transport?.close(CLOSE_MESSAGE_TOO_BIG, 'message too big');
        return;
      }
      const actor = data.actor;
      if (!actor || actor.isClosed) return;
      try {
        if (isBinary) data.transport!.receive(message, data.onFrame!);
        else {
          const msg = parseClientMessage(Buffer.from(message).toString('utf8'));
          if (msg?.type === 'playback_done') actor.post({ kind: 'playback_done' });
          else if (msg?.type === 'text_inject') actor.post({ kind: 'text_inject', text: msg.text, role: msg.role });
          else if (msg?.type === 'invalid') actor.post({ kind: 'client_invalid', message: msg.message });
        }
      } catch (err) {
        // A bad frame or a bug in one call never takes down the node.
        logger.error({ err }, 'socket message failed');
        actor.endCall('error');
      }
    },
    close: (ws: WebSocket<SocketData>) => {
      const data = ws.getUserData();
      data.closed = true;
      admission.release(data.addressKey);
      if (data.transport?.droppedInMessages) logger.info({ session: maskSessionId(data.sessionId), droppedInMessages: data.transport.droppedInMessages }, 'browser audio input dropped');
      data.transport?.markClosed();
      data.actor?.post({ kind: 'transport_closed' });
    },
  });
}

function profileFrom(q: URLSearchParams): VadProfile {
  if (q.get('profile') === 'browser_speakers') return 'browser_speakers';
  return 'browser_headset';
}
