/**
 * An engine node: the uWebSockets.js server, its calls (one CallActor each), the pacer that sends
 * due audio frames, its registry presence (heartbeat with load) and its command channel (text,
 * end, prewarm, amd routed here by whichever control plane received them). Two socket routes:
 * browsers (`/api/v1/voice/ws/{session_id}`, PCM) and Twilio Media Streams
 * (`/api/v1/voice/ws/twilio/{callSid}`, see transports/twilio.ts and transports/NOTES.md).
 */
import { randomUUID } from 'node:crypto';
import type { Clock, TimerHandle } from '../shared/clock.js';
import type { Config } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import type { SessionRegistry, NodeCommand } from '../shared/registry/index.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import { parseClientMessage, SOCKET_ERRORS } from '../shared/protocol/voice-socket.js';
import { assertNativeUws, uws, type HttpRequest, type HttpResponse, type WebSocket, type us_listen_socket } from './uws.js';
import { CallActor } from './session/actor.js';
import type { CallRecorder } from './session/recorder.js';
import { BrowserTransport } from './transports/browser.js';
import { TwilioTransport, type TwilioEvent } from './transports/twilio.js';
import { amdSettings, type AmdVerdict } from './session/amd.js';
import { createProviders } from './providers/registry.js';
import type { AsrProvider, LlmProvider, TtsProvider } from './providers/types.js';
import type { VadProfile } from './audio/vad.js';
import { Pacer } from './session/pacer.js';

export interface EngineNodeOptions {
  config: Config;
  logger: Logger;
  clock: Clock;
  registry: SessionRegistry;
  /** Durable records (conversations); one per call. */
  recorderFactory?: (config: SessionConfig) => CallRecorder | undefined;
  /** Test hook: provider overrides (e.g. sim providers with scripted latencies). */
  providerFactory?: (config: SessionConfig) => { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider };
  nodeId?: string;
  port?: number;
  host?: string;
  heartbeatMs?: number;
  /** How long pre-warmed providers wait for their session's socket before being closed. Default 30 000. */
  prewarmTtlMs?: number;
}

interface SocketData {
  sessionId: string;
  profile: VadProfile;
  claim: 'claimed' | 'not_found' | 'taken' | 'error';
  config?: SessionConfig;
  actor?: CallActor;
  transport?: BrowserTransport;
}

/** A carrier media socket: the session is claimed from the `start` frame, not from the URL. */
interface TwilioSocketData {
  /** The URL's last segment: the CallSid (inbound) or our call id (outbound); informational only. */
  pathId: string;
  streamId: number;
  state: 'awaiting_start' | 'claiming' | 'live' | 'refused' | 'closed';
  transport?: TwilioTransport;
  actor?: CallActor;
}

export interface EngineNode {
  nodeId: string;
  port: number;
  /** Live calls by session id. */
  calls: Map<string, CallActor>;
  pacer: Pacer;
  /** Pops carrier inbound audio (jitter buffers) on its own tick. */
  carrierPacer: Pacer;
  close(): Promise<void>;
}

const CLAIM_TTL_MS = 4 * 60 * 60 * 1000;
const PREWARM_TTL_MS = 30_000;
const AMD_VERDICTS: readonly AmdVerdict[] = ['human', 'machine', 'unknown'];

export async function startEngineNode(opts: EngineNodeOptions): Promise<EngineNode> {
  assertNativeUws();
  const { config, logger, clock, registry } = opts;
  const nodeId = opts.nodeId ?? `engine-${randomUUID().slice(0, 8)}`;
  const calls = new Map<string, CallActor>();
  const prewarmed = new Map<string, { providers: ReturnType<typeof createProviders>; timer: TimerHandle }>();
  let openSockets = 0;
  const pacer = new Pacer(clock, calls);
  // Carrier media sockets (open ones, attached or not) by a per-node stream id.
  const carrierStreams = new Map<string, TwilioTransport>();
  // 5 ms: a pop lands at most 5 ms after its slot, well inside the half-frame phase margin.
  const carrierPacer = new Pacer(clock, carrierStreams, 5);
  let nextStreamId = 1;

  const providersFor = (c: SessionConfig) => {
    if (opts.providerFactory) return opts.providerFactory(c);
    const warm = prewarmed.get(c.session_id);
    if (warm) {
      clock.clearTimeout(warm.timer);
      prewarmed.delete(c.session_id);
      return warm.providers;
    }
    return createProviders(c.providers, { clock, language: c.language });
  };

  const app = uws.App();
  app.ws<SocketData>('/api/v1/voice/ws/:sessionId', {
    maxPayloadLength: 64 * 1024,
    idleTimeout: 60,
    maxBackpressure: 1024 * 1024,
    closeOnBackpressureLimit: 1,
    upgrade: (res: HttpResponse, req: HttpRequest, context) => {
      // Copy everything out of req now: it is invalid after this callback returns.
      const sessionId = req.getParameter(0) ?? '';
      const query = new URLSearchParams(req.getQuery() ?? '');
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      let aborted = false;
      res.onAborted(() => (aborted = true));
      if (openSockets >= config.maxSockets) {
        res.cork(() => {
          res.writeStatus('503 Service Unavailable').writeHeader('content-type', 'application/json');
          res.end(JSON.stringify({ error: { code: 'SERVICE_UNAVAILABLE', message: 'concurrent socket cap reached' } }));
        });
        return;
      }
      const profile = profileFrom(query);
      registry.claimSession(sessionId, nodeId, CLAIM_TTL_MS).then(
        (result) => {
          if (aborted) return;
          const data: SocketData = { sessionId, profile, claim: result.status };
          if (result.status === 'claimed') data.config = result.session.config as SessionConfig;
          res.cork(() => res.upgrade(data, key, protocol, extensions, context));
        },
        (err: Error) => {
          logger.error({ err: err.message, sessionId: redactId(sessionId) }, 'session claim failed');
          if (aborted) return;
          res.cork(() => res.upgrade({ sessionId, profile, claim: 'error' } as SocketData, key, protocol, extensions, context));
        },
      );
    },
    open: (ws: WebSocket<SocketData>) => {
      openSockets++;
      const data = ws.getUserData();
      const transport = new BrowserTransport(ws as never, clock);
      data.transport = transport;
      const refuse = (message: string, extra: Record<string, unknown> = {}) => {
        transport.sendEvent({ type: 'error', message, fatal: true, ...extra } as never);
        transport.close(1008, message);
      };
      // One session, one socket: a second socket for a live call is refused like an unknown session.
      if (data.claim !== 'claimed' || !data.config || calls.has(data.config.session_id)) return refuse(SOCKET_ERRORS.sessionNotFound);
      if (calls.size >= config.engineCapacity) return refuse(SOCKET_ERRORS.atCapacity);
      const sc = data.config;
      let providers;
      try {
        providers = providersFor(sc);
      } catch (err) {
        return refuse((err as Error).message, { code: (err as { code?: string }).code ?? 'PROVIDER_ERROR' });
      }
      try {
        const actor = new CallActor({
          config: sc,
          transport,
          providers,
          profile: data.profile,
          clock,
          logger,
          recorder: opts.recorderFactory?.(sc),
          onClosed: () => {
            closeProviders(providers);
            calls.delete(sc.session_id);
            void registry.deleteSession(sc.session_id).catch(() => {});
          },
        });
        data.actor = actor;
        calls.set(sc.session_id, actor);
        actor.start();
      } catch (err) {
        logger.error({ err: (err as Error).stack }, 'call start failed');
        refuse('internal error');
      }
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
        logger.error({ err: (err as Error).stack }, 'socket message failed');
        actor.endCall('error');
      }
    },
    close: (ws: WebSocket<SocketData>) => {
      openSockets--;
      const data = ws.getUserData();
      data.transport?.markClosed();
      data.actor?.post({ kind: 'transport_closed' });
    },
  });
  app.ws<TwilioSocketData>('/api/v1/voice/ws/twilio/:callSid', {
    maxPayloadLength: 64 * 1024,
    idleTimeout: 60,
    maxBackpressure: 1024 * 1024,
    closeOnBackpressureLimit: 1,
    upgrade: (res: HttpResponse, req: HttpRequest, context) => {
      const pathId = req.getParameter(0) ?? '';
      const key = req.getHeader('sec-websocket-key');
      const protocol = req.getHeader('sec-websocket-protocol');
      const extensions = req.getHeader('sec-websocket-extensions');
      res.onAborted(() => {});
      if (openSockets >= config.maxSockets) {
        res.cork(() => {
          res.writeStatus('503 Service Unavailable').writeHeader('content-type', 'application/json');
          res.end(JSON.stringify({ error: { code: 'SERVICE_UNAVAILABLE', message: 'concurrent socket cap reached' } }));
        });
        return;
      }
      // Nothing to claim yet: the session id arrives in the `start` frame's customParameters.
      res.upgrade({ pathId, streamId: nextStreamId++, state: 'awaiting_start' } as TwilioSocketData, key, protocol, extensions, context);
    },
    open: (ws: WebSocket<TwilioSocketData>) => {
      openSockets++;
      const data = ws.getUserData();
      data.transport = new TwilioTransport(ws as never, clock);
      carrierStreams.set(String(data.streamId), data.transport);
    },
    message: (ws: WebSocket<TwilioSocketData>, message: ArrayBuffer, isBinary: boolean) => {
      const data = ws.getUserData();
      const transport = data.transport!;
      if (isBinary) {
        // Not part of Media Streams: counted (transport stats) and logged once.
        transport.receiveBinary();
        if (transport.stats().binaryFramesIgnored === 1) logger.warn({ stream: data.pathId.slice(0, 8) }, 'binary frame on a carrier socket ignored');
        return;
      }
      try {
        const ev = transport.receiveText(Buffer.from(message).toString('utf8'));
        if (ev) onTwilioEvent(data, ev);
      } catch (err) {
        logger.error({ err: (err as Error).stack }, 'carrier socket message failed');
        data.actor?.endCall('error');
      }
    },
    close: (ws: WebSocket<TwilioSocketData>) => {
      openSockets--;
      const data = ws.getUserData();
      data.state = 'closed';
      data.transport?.markClosed();
      carrierStreams.delete(String(data.streamId));
      data.actor?.post({ kind: 'transport_closed' });
    },
  });

  function onTwilioEvent(data: TwilioSocketData, ev: TwilioEvent): void {
    switch (ev.event) {
      case 'start':
        if (data.state !== 'awaiting_start') return;
        data.state = 'claiming';
        claimCarrierSession(data, ev.customParameters.session_id ?? '', ev.customParameters.agent_id ?? '');
        return;
      case 'mark':
        // Echoes of marks pending at a `clear` are for dropped audio: not heard, not forwarded.
        if (!ev.cleared) data.actor?.post({ kind: 'mark', name: ev.name });
        return;
      case 'stop':
        // Caller hung up, or the call was redirected (transfer): the socket closes right after.
        data.actor?.post({ kind: 'end', reason: 'stream_stopped' });
        return;
      case 'dtmf':
        logger.debug({ stream: data.pathId.slice(0, 8), digit: ev.digit }, 'dtmf');
        return;
      case 'invalid':
        logger.debug({ stream: data.pathId.slice(0, 8), reason: ev.reason }, 'invalid carrier frame ignored');
        return;
      case 'connected':
        return;
    }
  }

  function claimCarrierSession(data: TwilioSocketData, sessionId: string, agentId: string): void {
    const transport = data.transport!;
    const refuse = (reason: string) => {
      logger.warn({ session: redactId(sessionId), reason }, 'carrier stream refused');
      data.state = 'refused';
      // Closing the stream makes the carrier run the TwiML after </Connect> (a hangup).
      transport.close(1008, reason);
    };
    if (!sessionId) return refuse('start without session_id');
    registry.claimSession(sessionId, nodeId, CLAIM_TTL_MS).then(
      (result) => {
        if (data.state === 'closed') {
          if (result.status === 'claimed') void registry.deleteSession(sessionId).catch(() => {});
          return;
        }
        if (result.status !== 'claimed') return refuse(SOCKET_ERRORS.sessionNotFound);
        const sc = result.session.config as SessionConfig;
        if (agentId && agentId !== sc.agent_id) return refuse('agent_id does not match the session');
        if (calls.size >= config.engineCapacity) return refuse(SOCKET_ERRORS.atCapacity);
        let providers;
        try {
          providers = providersFor(sc);
        } catch (err) {
          return refuse((err as Error).message);
        }
        try {
          const mulaw = providers.asr.capabilities.acceptsMulaw;
          const actor = new CallActor({
            config: sc,
            transport,
            providers,
            profile: 'telephony',
            clock,
            logger,
            recorder: opts.recorderFactory?.(sc),
            asrInput: mulaw ? { encoding: 'mulaw', sampleRateHz: 8000 } : { encoding: 'linear16', sampleRateHz: 16000 },
            amd: sc.call_direction === 'outbound' ? amdSettings(sc.agent_metadata) : undefined,
            transportStats: () => transport.stats(),
            onClosed: () => {
              closeProviders(providers);
              calls.delete(sc.session_id);
              void registry.deleteSession(sc.session_id).catch(() => {});
            },
          });
          data.actor = actor;
          data.state = 'live';
          calls.set(sc.session_id, actor);
          actor.start();
          transport.attach(actor, { passRawMulaw: mulaw });
        } catch (err) {
          logger.error({ err: (err as Error).stack }, 'carrier call start failed');
          refuse('internal error');
        }
      },
      (err: Error) => {
        logger.error({ err: err.message, session: redactId(sessionId) }, 'session claim failed');
        if (data.state !== 'closed') refuse('session claim failed');
      },
    );
  }

  app.get('/healthz', (res) => {
    res.writeHeader('content-type', 'application/json').end(JSON.stringify({ status: 'ok', node_id: nodeId, calls: calls.size, sockets: openSockets }));
  });
  app.any('/*', (res) => {
    res.writeStatus('404 Not Found').writeHeader('content-type', 'application/json').end(JSON.stringify({ error: { code: 'NOT_FOUND', message: 'no such route' } }));
  });

  const listenSocket = await new Promise<us_listen_socket>((resolve, reject) => {
    app.listen(opts.host ?? config.host, opts.port ?? config.enginePort, (s) => (s ? resolve(s) : reject(new Error(`engine could not listen on port ${opts.port ?? config.enginePort}`))));
  });
  const port = uws.us_socket_local_port(listenSocket);
  const wsUrl = config.enginePort === 0 || opts.port === 0 ? `ws://127.0.0.1:${port}` : config.enginePublicUrl;

  const heartbeatMs = opts.heartbeatMs ?? 2000;
  const beat = () =>
    registry.heartbeat({ nodeId, wsUrl, capacity: config.engineCapacity, load: calls.size, updatedAtMs: clock.now() }, heartbeatMs * 3).catch((err: Error) => {
      logger.warn({ err: err.message }, 'registry heartbeat failed');
    });
  await beat();
  const heartbeat = clock.setInterval(() => void beat(), heartbeatMs);

  const stopCommands = await registry.serveCommands(nodeId, async (cmd: NodeCommand) => handleCommand(cmd));
  async function handleCommand(cmd: NodeCommand): Promise<unknown> {
    const sessionId = cmd.sessionId ?? '';
    const actor = calls.get(sessionId);
    if (cmd.kind === 'text') {
      if (!actor) throw Object.assign(new Error('session not found'), { code: 'NOT_FOUND' });
      const p = (cmd.payload ?? {}) as { text?: string; role?: string };
      actor.post({ kind: 'text_inject', text: String(p.text ?? ''), role: p.role === 'system' ? 'system' : 'user' });
      return { status: 'injected' };
    }
    if (cmd.kind === 'end') {
      // A transfer hands the caller to a human: the AI drops off with that reason on the record.
      const reason = (cmd.payload as { reason?: unknown } | undefined)?.reason === 'transferred' ? 'transferred' : 'ended_by_api';
      if (actor) actor.endCall(reason);
      else await registry.deleteSession(sessionId);
      return { status: 'ended' };
    }
    if (cmd.kind === 'amd') {
      if (!actor) throw Object.assign(new Error('session not found'), { code: 'NOT_FOUND' });
      const verdict = (cmd.payload as { verdict?: unknown } | undefined)?.verdict;
      if (!AMD_VERDICTS.includes(verdict as AmdVerdict)) throw Object.assign(new Error('verdict must be human, machine or unknown'), { code: 'INVALID_REQUEST' });
      actor.post({ kind: 'amd_verdict', verdict: verdict as AmdVerdict });
      return { status: 'applied' };
    }
    if (cmd.kind === 'prewarm') {
      const session = await registry.getSession(sessionId);
      if (!session || prewarmed.has(sessionId) || calls.has(sessionId) || opts.providerFactory) return { status: 'skipped' };
      const sc = session.config as SessionConfig;
      const providers = createProviders(sc.providers, { clock, language: sc.language });
      const timer = clock.setTimeout(() => {
        prewarmed.delete(sessionId);
        closeProviders(providers);
      }, opts.prewarmTtlMs ?? PREWARM_TTL_MS);
      // Registered before the handshakes finish: a socket opening meanwhile adopts the ones in flight.
      prewarmed.set(sessionId, { providers, timer });
      await Promise.allSettled([providers.asr.warm?.(), providers.llm.warm?.(), providers.tts.warm?.()]);
      return { status: 'warm' };
    }
    throw Object.assign(new Error(`unknown command ${cmd.kind}`), { code: 'INVALID_REQUEST' });
  }

  pacer.start();
  carrierPacer.start();
  logger.info({ nodeId, port, wsUrl }, 'media engine listening');
  let closed = false;
  return {
    nodeId,
    port,
    calls,
    pacer,
    carrierPacer,
    async close() {
      if (closed) return;
      closed = true;
      pacer.stop();
      carrierPacer.stop();
      clock.clearInterval(heartbeat);
      for (const a of [...calls.values()]) a.endCall('server_shutdown');
      for (const w of prewarmed.values()) {
        clock.clearTimeout(w.timer);
        closeProviders(w.providers);
      }
      await stopCommands().catch(() => {});
      await registry.removeNode(nodeId).catch(() => {});
      uws.us_listen_socket_close(listenSocket);
    },
  };
}

function closeProviders(p: { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider }): void {
  for (const x of [p.asr, p.llm, p.tts]) {
    try {
      x.close?.();
    } catch {
      // best effort: a provider failing to close must not affect the node
    }
  }
}

function profileFrom(q: URLSearchParams): VadProfile {
  if (q.get('profile') === 'browser_speakers') return 'browser_speakers';
  return 'browser_headset';
}

/** Session ids are credentials: log only a prefix. */
function redactId(id: string): string {
  return `${id.slice(0, 6)}…`;
}
