/**
 * An engine node: the uWebSockets.js server, its calls (one CallActor each), the pacer that sends
 * due audio frames, its registry presence (heartbeat with load) and its command channel (text,
 * end, prewarm routed here by whichever control plane received them).
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
}

interface SocketData {
  sessionId: string;
  profile: VadProfile;
  claim: 'claimed' | 'not_found' | 'taken' | 'error';
  config?: SessionConfig;
  actor?: CallActor;
  transport?: BrowserTransport;
}

export interface EngineNode {
  nodeId: string;
  port: number;
  /** Live calls by session id. */
  calls: Map<string, CallActor>;
  pacer: Pacer;
  close(): Promise<void>;
}

const CLAIM_TTL_MS = 4 * 60 * 60 * 1000;
const PREWARM_TTL_MS = 30_000;

export async function startEngineNode(opts: EngineNodeOptions): Promise<EngineNode> {
  assertNativeUws();
  const { config, logger, clock, registry } = opts;
  const nodeId = opts.nodeId ?? `engine-${randomUUID().slice(0, 8)}`;
  const calls = new Map<string, CallActor>();
  const prewarmed = new Map<string, { providers: ReturnType<typeof createProviders>; timer: TimerHandle }>();
  let openSockets = 0;
  const pacer = new Pacer(clock, calls);

  const providersFor = (c: SessionConfig) => {
    if (opts.providerFactory) return opts.providerFactory(c);
    const warm = prewarmed.get(c.session_id);
    if (warm) {
      clock.clearTimeout(warm.timer);
      prewarmed.delete(c.session_id);
      return warm.providers;
    }
    return createProviders(c.providers, { clock });
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
      if (actor) actor.endCall('ended_by_api');
      else await registry.deleteSession(sessionId);
      return { status: 'ended' };
    }
    if (cmd.kind === 'prewarm') {
      const session = await registry.getSession(sessionId);
      if (!session || prewarmed.has(sessionId) || opts.providerFactory) return { status: 'skipped' };
      const providers = createProviders((session.config as SessionConfig).providers, { clock });
      await Promise.allSettled([providers.asr.warm?.(), providers.llm.warm?.(), providers.tts.warm?.()]);
      const timer = clock.setTimeout(() => prewarmed.delete(sessionId), PREWARM_TTL_MS);
      prewarmed.set(sessionId, { providers, timer });
      return { status: 'warm' };
    }
    throw Object.assign(new Error(`unknown command ${cmd.kind}`), { code: 'INVALID_REQUEST' });
  }

  pacer.start();
  logger.info({ nodeId, port, wsUrl }, 'media engine listening');
  let closed = false;
  return {
    nodeId,
    port,
    calls,
    pacer,
    async close() {
      if (closed) return;
      closed = true;
      pacer.stop();
      clock.clearInterval(heartbeat);
      for (const a of [...calls.values()]) a.endCall('server_shutdown');
      for (const w of prewarmed.values()) clock.clearTimeout(w.timer);
      await stopCommands().catch(() => {});
      await registry.removeNode(nodeId).catch(() => {});
      uws.us_listen_socket_close(listenSocket);
    },
  };
}

function profileFrom(q: URLSearchParams): VadProfile {
  if (q.get('profile') === 'browser_speakers') return 'browser_speakers';
  return 'browser_headset';
}

/** Session ids are credentials: log only a prefix. */
function redactId(id: string): string {
  return `${id.slice(0, 6)}…`;
}
