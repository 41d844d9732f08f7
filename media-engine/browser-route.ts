/**
 * The browser socket route (`/api/v1/voice/ws/{session_id}`, PCM): admission at the upgrade, the
 * session claimed before the upgrade completes (or 503 at the deadline), then one call per socket.
 */
import { INSUFFICIENT_BALANCE, parseClientMessage, SOCKET_ERRORS } from '../shared/protocol/voice-socket.js';
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

interface SocketData {
  /** The admission slot this socket holds (released on close). */
  addressKey: string;
  sessionId: string;
  profile: VadProfile;
  claim: 'claimed' | 'not_found' | 'taken' | 'error';
  config?: SessionConfig;
  /** The workspace's credit at connect (BILLING_ENABLED), read with the claim, before the upgrade. */
  credit?: CreditVerdict;
  actor?: CallActor;
  transport?: BrowserTransport;
}

export function registerBrowserRoute(app: TemplatedApp, ctx: EngineContext): void {
  const { config, logger, clock, registry, nodeId, calls, admission } = ctx;
  app.ws<SocketData>('/api/v1/voice/ws/:sessionId', {
    maxPayloadLength: 64 * 1024,
    ...SOCKET_LIMITS,
    upgrade: (res: HttpResponse, req: HttpRequest, context) => {
      // Copy everything out of req now: it is invalid after this callback returns.
      const sessionId = req.getParameter(0) ?? '';
      const query = new URLSearchParams(req.getQuery() ?? '');
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      const addr = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
      const verdict = admission.admit(addr);
      if (verdict !== 'ok') return refuseUpgrade(res, verdict);
      // The slot is ours until the socket closes, or until the upgrade is abandoned: exactly once.
      let settled = false;
      const abandon = () => {
        if (settled) return false;
        settled = true;
        clock.clearTimeout(claimTimer);
        admission.release(addr);
        return true;
      };
      res.onAborted(() => abandon());
      // A claim stuck on the registry must not hold the slot: past the deadline, answer 503.
      const claimTimer = clock.setTimeout(() => {
        if (abandon()) refuseUpgrade(res, 'claim_timeout');
      }, config.socketStartTimeoutMs);
      const profile = profileFrom(query);
      const upgrade = (data: SocketData) => {
        if (settled) {
          // Too late (timed out or the client left): give a claimed session back.
          if (data.claim === 'claimed') void registry.sessions.deleteSession(sessionId).catch(() => {});
          return;
        }
        settled = true;
        clock.clearTimeout(claimTimer);
        res.cork(() => res.upgrade(data, key, protocol, extensions, context));
      };
      const claim = async (): Promise<SocketData> => {
        const result = await registry.sessions.claimSession(sessionId, nodeId, CLAIM_TTL_MS);
        const data: SocketData = { addressKey: addr, sessionId, profile, claim: result.status };
        if (result.status === 'claimed') {
          data.config = result.session.config as SessionConfig;
          data.credit = await creditAtConnect(ctx, data.config);
        }
        return data;
      };
      claim().then(
        (data) => upgrade(data),
        (err: Error) => {
          logger.error({ err, session: maskSessionId(sessionId) }, 'session claim failed');
          upgrade({ addressKey: addr, sessionId, profile, claim: 'error' });
        },
      );
    },
    open: (ws: WebSocket<SocketData>) => {
      const data = ws.getUserData();
      const transport = new BrowserTransport(ws as never, clock);
      data.transport = transport;
      const refuse = (message: string, extra: Record<string, unknown> = {}) => {
        transport.sendEvent({ type: 'error', message, fatal: true, ...extra } as never);
        transport.close(1008, message);
      };
      // One session, one socket: a second socket for a live call is refused like an unknown session.
      if (data.claim !== 'claimed' || !data.config || calls.has(data.config.session_id)) return refuse(SOCKET_ERRORS.sessionNotFound);
      if (data.credit?.ok === false) {
        // The session is spent: after a top-up the client starts a new one.
        void registry.sessions.deleteSession(data.sessionId).catch(() => {});
        return refuse(SOCKET_ERRORS.insufficientBalance, { code: INSUFFICIENT_BALANCE });
      }
      startCall(ctx, data.config, {
        allowanceMs: data.credit?.ok ? data.credit.allowanceMs : undefined,
        kind: 'browser',
        transport,
        profile: data.profile,
        refuse: (message, code) => refuse(message, code ? { code } : {}),
        bind: (actor) => (data.actor = actor),
      });
    },
    message: (ws: WebSocket<SocketData>, message: ArrayBuffer, isBinary: boolean) => {
      const data = ws.getUserData();
      const actor = data.actor;
      if (!actor || actor.isClosed) return;
      try {
        if (isBinary) data.transport!.receive(message, (frame) => actor.onAudio(frame));
        else {
          const msg = parseClientMessage(Buffer.from(message).toString('utf8'));
          if (msg?.type === 'playback_done') actor.post({ kind: 'playback_done' });
          else if (msg?.type === 'text_inject') actor.post({ kind: 'text_inject', text: msg.text, role: msg.role });
        }
      } catch (err) {
        // A bad frame or a bug in one call never takes down the node.
        logger.error({ err }, 'socket message failed');
        actor.endCall('error');
      }
    },
    close: (ws: WebSocket<SocketData>) => {
      const data = ws.getUserData();
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
