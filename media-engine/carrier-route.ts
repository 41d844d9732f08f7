/**
 * The carrier socket routes, one per carrier protocol (`/api/v1/voice/ws/<carrier>/{id}`:
 * Twilio's `/api/v1/voice/ws/twilio/{callSid}` unchanged; transports/carrier-protocols.ts and
 * transports/NOTES.md): the session is claimed from the `start` frame (or, for carriers whose
 * start carries no parameters, from the URL's query), and a socket that does not get live within
 * the start deadline is closed.
 */
import type { TimerHandle } from '../shared/clock.js';
import { INSUFFICIENT_BALANCE, SOCKET_ERRORS } from '../shared/protocol/voice-socket.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import { CLAIM_TTL_MS, SOCKET_LIMITS, type EngineContext } from './engine-context.js';
import { creditAtConnect } from './credit-check.js';
import type { CallActor } from './session/actor.js';
import { startCall } from './start-call.js';
import { addressKey, refuseUpgrade } from './transports/socket-admission.js';
import { CarrierTransport, type CarrierEvent } from './transports/carrier-transport.js';
import type { CarrierProtocol } from './transports/carrier-protocol.js';
import { PROTOCOLS } from './transports/carrier-protocols.js';
import type { HttpRequest, HttpResponse, TemplatedApp, WebSocket } from './uws.js';
import { maskSessionId } from '../shared/ids.js';
import { MAX_CARRIER_FRAME_CHARS } from '../shared/protocol/twilio-media.js';

/** A carrier media socket: the session is claimed from the `start` frame, not from the URL. */
interface CarrierSocketData {
  addressKey: string;
  /** Closes the socket if it is not live (start received, session claimed) in time. */
  startTimer?: TimerHandle;
  /** The URL's last segment: the CallSid (inbound) or our call id (outbound); informational only. */
  pathId: string;
  streamId: number;
  state: 'awaiting_start' | 'claiming' | 'live' | 'refused' | 'closed';
  /** `session_id` / `agent_id` from the URL query (carriers with `sessionParams: 'query'`). */
  query: { session_id: string; agent_id: string };
  transport?: CarrierTransport;
  actor?: CallActor;
}

/** The WebSocket library's own limit: a message between MAX_CARRIER_FRAME_CHARS and this gets close 1009 and a log line. */
const CARRIER_WIRE_LIMIT_BYTES = 64 * 1024;
const CLOSE_MESSAGE_TOO_BIG = 1009;

/** `carrierStreams`: open carrier sockets (attached or not) by a per-node stream id, for the carrier pacer. */
export function registerCarrierRoute(app: TemplatedApp, ctx: EngineContext, carrierStreams: Map<string, CarrierTransport>): void {
  const counter = { next: 1 };
  for (const protocol of PROTOCOLS) registerProtocol(app, ctx, carrierStreams, protocol, counter);
}

function registerProtocol(app: TemplatedApp, ctx: EngineContext, carrierStreams: Map<string, CarrierTransport>, protocol: CarrierProtocol, ids: { next: number }): void {
  const { config, logger, clock, registry, nodeId, admission } = ctx;
  app.ws<CarrierSocketData>(`/api/v1/voice/ws/${protocol.carrier}/:callSid`, {
    // Twilio frames are a few hundred bytes (`start` with parameters a few KiB): a message over
    // MAX_CARRIER_FRAME_CHARS is refused below with a log line and close 1009; uWS drops one past
    // this wire limit without a close frame (1006).
    maxPayloadLength: CARRIER_WIRE_LIMIT_BYTES,
    ...SOCKET_LIMITS,
    upgrade: (res: HttpResponse, req: HttpRequest, context) => {
      const pathId = req.getParameter(0) ?? '';
      // Bounded like start parameters; only read for carriers whose start carries none.
      const q = (name: string) => (protocol.sessionParams === 'query' ? (req.getQuery(name) ?? '').slice(0, 256) : '');
      const query = { session_id: q('session_id'), agent_id: q('agent_id') };
      const key = req.getHeader('sec-websocket-key');
      const wsProtocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      res.onAborted(() => {});
      const addr = addressKey(Buffer.from(res.getRemoteAddressAsText()).toString());
      const verdict = admission.admit(addr);
      if (verdict !== 'ok') return refuseUpgrade(res, verdict);
      // Nothing to claim yet: the session id arrives in the `start` frame's customParameters.
      // uWS calls `open` (which owns the slot from then on) synchronously inside upgrade.
      res.upgrade({ addressKey: addr, pathId, streamId: ids.next++, state: 'awaiting_start', query } as CarrierSocketData, key, wsProtocol, extensions, context);
    },
    open: (ws: WebSocket<CarrierSocketData>) => {
      const data = ws.getUserData();
      const transport = new CarrierTransport(ws as never, clock, protocol, { framesPerMessage: config.carrierOutMessageMs / 20 });
      data.transport = transport;
      // Carriers without mark echoes: the transport's play-out clock says when a mark is heard.
      transport.onMarkEmulated((name) => data.actor?.post({ kind: 'mark', name }));
      carrierStreams.set(String(data.streamId), transport);
      // Issue 11, socket-cap exhaustion: a socket that never sends `start` (or whose claim never
      // completes) would hold its slot until uWS's 60 s idle timeout; close it at the deadline.
      data.startTimer = clock.setTimeout(() => {
        if (data.state !== 'awaiting_start' && data.state !== 'claiming') return;
        logger.info({ stream: data.pathId.slice(0, 8), state: data.state, timeoutMs: config.socketStartTimeoutMs }, 'carrier socket closed: no start within the deadline');
        transport.close(1008, data.state === 'awaiting_start' ? 'no start within the deadline' : 'session claim timed out');
      }, config.socketStartTimeoutMs);
    },
    message: (ws: WebSocket<CarrierSocketData>, message: ArrayBuffer, isBinary: boolean) => {
      const data = ws.getUserData();
      const transport = data.transport!;
      if (message.byteLength > MAX_CARRIER_FRAME_CHARS) {
        const why = `message of ${message.byteLength} bytes: the most is ${MAX_CARRIER_FRAME_CHARS}`;
        logger.warn({ stream: data.pathId.slice(0, 8), carrier: protocol.carrier, bytes: message.byteLength }, 'carrier stream closed: message too big');
        // The actor ends the call (the record says we did), as for a stream of invalid frames.
        if (data.actor) data.actor.post({ kind: 'end', reason: 'invalid_stream', close: { code: CLOSE_MESSAGE_TOO_BIG, text: why } });
        else transport.close(CLOSE_MESSAGE_TOO_BIG, why);
        return;
      }
      try {
        // Binary frames are not part of Media Streams: invalid, counted like any other garbage.
        const ev = transport.receiveFrame(message, isBinary);
        if (ev) onCarrierEvent(data, ev);
      } catch (err) {
        logger.error({ err }, 'carrier socket message failed');
        data.actor?.endCall('error');
      }
    },
    close: (ws: WebSocket<CarrierSocketData>) => {
      const data = ws.getUserData();
      admission.release(data.addressKey);
      clock.clearTimeout(data.startTimer);
      const stats = data.transport?.stats();
      // The call's log at the end carries what was dropped (the turn records carry it per turn).
      if (stats && (stats.invalidFrames > 0 || stats.mediaBeforeClaim > 0 || stats.unknownEvents > 0)) {
        logger.info({ stream: data.pathId.slice(0, 8), invalidFrames: stats.invalidFrames, invalidReasons: stats.invalidReasons, unknownEvents: stats.unknownEvents, mediaBeforeClaim: stats.mediaBeforeClaim }, 'carrier stream input dropped');
      }
      data.state = 'closed';
      data.transport?.markClosed();
      carrierStreams.delete(String(data.streamId));
      data.actor?.post({ kind: 'transport_closed' });
    },
  });

  function onCarrierEvent(data: CarrierSocketData, ev: CarrierEvent): void {
    switch (ev.event) {
      case 'start':
        if (data.state !== 'awaiting_start') return;
        data.state = 'claiming';
        claimCarrierSession(data, ev.customParameters.session_id || data.query.session_id, ev.customParameters.agent_id || data.query.agent_id);
        return;
      case 'mark':
        // Echoes of marks pending at a `clear` are for dropped audio: not heard, not forwarded.
        if (!ev.cleared) data.actor?.post({ kind: 'mark', name: ev.name });
        return;
      case 'stop':
        // Caller hung up, or the call was redirected (transfer): the socket closes right after.
        if (data.actor) data.actor.post({ kind: 'end', reason: 'stream_stopped' });
        // Before any call exists (no start yet, or its claim in flight): nothing to end, so the
        // socket is closed now instead of holding its slot until the start deadline (the claim,
        // if any, sees it closed and gives the session back).
        else if (data.state === 'awaiting_start' || data.state === 'claiming') data.transport!.close(1000, 'stream stopped before the call started');
        return;
      case 'dtmf':
        // A key the caller pressed: the actor tells the LLM / flow and the record (issue 24).
        data.actor?.post({ kind: 'dtmf', digit: ev.digit });
        return;
      case 'invalid':
        if (ev.close) {
          const stats = data.transport!.stats();
          const why = ev.message ?? 'too many invalid frames';
          logger.warn({ stream: data.pathId.slice(0, 8), reason: ev.reason, invalidFrames: stats.invalidFrames, invalidReasons: stats.invalidReasons }, `carrier stream closed: ${why}`);
          // The actor ends the call and closes the socket, so the record says we ended it (a close
          // from here would read as the caller hanging up).
          if (data.actor) data.actor.post({ kind: 'end', reason: 'invalid_stream', close: { code: 1008, text: why } });
          else data.transport!.close(1008, why);
        } else {
          logger.debug({ stream: data.pathId.slice(0, 8), reason: ev.reason }, 'invalid carrier frame dropped');
        }
        return;
      case 'connected':
        return;
    }
  }

  function claimCarrierSession(data: CarrierSocketData, sessionId: string, agentId: string): void {
    const transport = data.transport!;
    const refuse = (reason: string) => {
      logger.warn({ session: maskSessionId(sessionId), reason }, 'carrier stream refused');
      data.state = 'refused';
      // Closing the stream makes the carrier run the TwiML after </Connect> (a hangup).
      transport.close(1008, reason);
    };
    if (!sessionId) return refuse('start without session_id');
    registry.sessions.claimSession(sessionId, nodeId, CLAIM_TTL_MS).then(
      (result) => {
        if (data.state === 'closed') {
          if (result.status === 'claimed') void registry.sessions.deleteSession(sessionId).catch(() => {});
          return;
        }
        if (result.status !== 'claimed') return refuse(SOCKET_ERRORS.sessionNotFound);
        const sc = result.session.config as SessionConfig;
        // One session, one socket: a second stream naming a live call's session is refused (it
        // took the call over: the caller's own stream went silent, the records were lost).
        if (ctx.calls.has(sc.session_id)) return refuse(SOCKET_ERRORS.sessionNotFound);
        if (agentId && agentId !== sc.agent_id) {
          // Claimed but unusable: given back (deleted, as the browser path does), or it would hold
          // its seat and stay claimable long after the 30 s connect window.
          void registry.sessions.deleteSession(sessionId).catch(() => {});
          return refuse('agent_id does not match the session');
        }
        creditAtConnect(ctx, sc).then(
          (credit) => {
            if (data.state === 'closed') return void registry.sessions.deleteSession(sessionId).catch(() => {});
            // No JSON events on carrier sockets: closing the stream hangs the call up (TwiML after </Connect>).
            if (!credit.ok) {
              void registry.sessions.deleteSession(sessionId).catch(() => {});
              return refuse(INSUFFICIENT_BALANCE);
            }
            startLive(sc, credit.allowanceMs);
          },
          (err: Error) => {
            logger.error({ err, session: maskSessionId(sessionId) }, 'credit check failed');
            if (data.state !== 'closed') refuse('credit check failed');
          },
        );
      },
      (err: Error) => {
        logger.error({ err, session: maskSessionId(sessionId) }, 'session claim failed');
        if (data.state !== 'closed') refuse('session claim failed');
      },
    );

    function startLive(sc: SessionConfig, allowanceMs: number | undefined): void {
      startCall(ctx, sc, {
        allowanceMs,
        kind: 'carrier',
        transport,
        // Carriers get no JSON events: the reason goes to the log and the close frame.
        refuse: (message) => refuse(message),
        bind: (actor) => {
          data.actor = actor;
          data.state = 'live';
          clock.clearTimeout(data.startTimer);
        },
      });
    }
  }
}
