/**
 * An engine node: the uWebSockets.js server, its calls (one CallActor each), the pacer that sends
 * due audio frames, its registry presence (heartbeat with load) and its command channel
 * (`node-commands.ts`). Two socket routes: browsers (`browser-route.ts`, PCM) and Twilio Media
 * Streams (`carrier-route.ts`); both start calls through `startCall()` (`start-call.ts`).
 */
import { randomUUID } from 'node:crypto';
import { ENGINE_NODES_TOPIC, MAX_PENDING_LISTED, type NodeCommand, REGISTRY_RESTORE_GRACE_MS } from '../shared/registry/index.js';
import { createOutboundClient } from '../shared/outbound/index.js';
import { EngineMetrics } from '../shared/observability/engine-metrics.js';
import { startTracing } from '../shared/observability/tracing.js';
import { registerMetricsRoute } from './metrics-route.js';
import { ProcessSampler } from '../shared/process-health.js';
import { registerBrowserRoute } from './browser-route.js';
import { createEngineConnectors } from './connectors.js';
import { registerCarrierRoute } from './carrier-route.js';
import type { EngineContext, EngineNodeOptions } from './engine-context.js';
import { handleCommand } from './node-commands.js';
import { PrewarmCache } from './prewarm.js';
import type { CallActor } from './session/actor.js';
import { PacedMap, Pacer } from './session/pacer.js';
import type { CarrierTransport } from './transports/carrier-transport.js';
import { SocketAdmission } from './transports/socket-admission.js';
import { realClock } from '../shared/clock.js';
import { assertNativeUws, uws, type us_listen_socket } from './uws.js';
import { type DrainOptions, type DrainOutcome, SHUTDOWN_REASON, startDrain, type Drain } from './drain.js';

export type { EngineNodeOptions } from './engine-context.js';

export interface EngineNode {
  nodeId: string;
  port: number;
  /** Live calls by session id. */
  calls: Map<string, CallActor>;
  pacer: Pacer;
  /** Pops carrier inbound audio (jitter buffers) on its own tick. */
  carrierPacer: Pacer;
  /** True from the first `drain()`: `/ready` answers 503 and control planes place no session here. */
  readonly draining: boolean;
  /**
   * Graceful drain (SIGTERM; `drain.ts`): no new sessions, live calls kept until they end or
   * `timeoutMs` passes, then a goodbye. Resolves when drained; call `close()` afterwards.
   * Idempotent (a second call returns the same drain).
   */
  drain(opts: DrainOptions): Promise<DrainOutcome>;
  /** A second signal: stop waiting for the drain (the calls then end with `close()`). */
  forceDrain(): void;
  /** Ends every call at once (`server_shutdown`), leaves the registry, stops listening. Idempotent. */
  close(): Promise<void>;
}

const PREWARM_TTL_MS = 30_000;
/** Records failing this long make the node unready (a blip of a second or two does not). */
export const RECORDS_UNAVAILABLE_AFTER_MS = 10_000;
/** The end reason of calls whose node was judged lost (control-plane/ops/node-sweeper.ts writes the same). */
const NODE_LOST_REASON = 'node_lost';

export async function startEngineNode(opts: EngineNodeOptions): Promise<EngineNode> {
  assertNativeUws();
  const { config, logger, clock, registry } = opts;
  const outbound = opts.outbound ?? createOutboundClient({ allowCidrs: config.outboundAllowCidrs, clock });
  const nodeId = opts.nodeId ?? `engine-${randomUUID().slice(0, 8)}`;
  const calls = new PacedMap<CallActor>();
  const prewarmed = new PrewarmCache(clock, opts.prewarmTtlMs ?? PREWARM_TTL_MS);
  const admission = new SocketAdmission(config.maxSockets, config.maxSocketsPerIp, realClock, { burst: 4 * config.socketOpensPerIpPerS, perSecond: config.socketOpensPerIpPerS });
  const metrics = new EngineMetrics({ prewarmed: () => prewarmed.size, recordsQueued: opts.recordsQueued });
  const tracing = opts.tracer ? undefined : startTracing({ endpoint: config.otelEndpoint, serviceName: config.otelServiceName });
  const tracer = opts.tracer ?? tracing?.tracer;
  // Checks the connector catalog like the control plane does: a bad one stops the node at start.
  const connectors = opts.sql && opts.secrets ? createEngineConnectors({ sql: opts.sql, secrets: opts.secrets, outbound, config, clock, logger }) : undefined;
  const ctx: EngineContext = { opts, config, logger, clock, registry, nodeId, outbound, calls, prewarmed, admission, metrics, tracer, connectors };
  const pacer = new Pacer(clock, calls);
  // Carrier media sockets (open ones, attached or not) by a per-node stream id.
  const carrierStreams = new PacedMap<CarrierTransport>();
  // 5 ms: a pop lands at most 5 ms after its slot, well inside the half-frame phase margin.
  const carrierPacer = new Pacer(clock, carrierStreams, 5);

  const app = uws.App();
  registerBrowserRoute(app, ctx);
  registerCarrierRoute(app, ctx, carrierStreams);
  registerMetricsRoute(app, metrics.registry, { token: config.metricsToken, production: config.nodeEnv === 'production' });
  let drain: Drain | undefined;
  let closed = false;
  // Orchestrator probes (docs/operations.md): ready = take new calls; live = the process works.
  app.get('/ready', (res) => {
    const status = drain || closed ? 'draining' : recordsDown() ? 'database_unavailable' : 'ready';
    const body = JSON.stringify({ status, node_id: nodeId, calls: calls.size, ...(status === 'database_unavailable' ? { problem: 'conversation records cannot be written (DATABASE_URL unreachable)' } : {}) });
    res.writeStatus(status === 'ready' ? '200 OK' : '503 Service Unavailable').writeHeader('content-type', 'application/json').end(body);
  });
  app.get('/live', (res) => {
    res.writeHeader('content-type', 'application/json').end(JSON.stringify({ status: 'live', node_id: nodeId }));
  });
  app.get('/healthz', (res) => {
    res.writeHeader('content-type', 'application/json').end(JSON.stringify({ status: 'ok', node_id: nodeId, calls: calls.size, prewarmed: prewarmed.size, sockets: admission.count }));
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
  // Health rides the heartbeat (issue 17): the control plane's collector copies it to Postgres.
  // Requests are voice-socket upgrades, errors the refused ones; the response time is the calls'
  // (end of the caller's turn to the reply's first audio) over about one report interval.
  const sampler = new ProcessSampler(() => clock.now());
  // Calls placed here while its records cannot be written would be lost: not ready, no placements.
  const recordsDown = () => (opts.recordsFailingForMs?.() ?? 0) >= RECORDS_UNAVAILABLE_AFTER_MS;
  const health = () =>
    sampler.sample({ activeConnections: admission.count, activeCalls: calls.size, requestCount: admission.admittedTotal + admission.refusedTotal, errorCount: admission.refusedTotal, avgResponseMs: metrics.avgResponseMs(clock.now(), config.healthReportIntervalMs) });
  /** The heartbeat in flight, if any: close() waits for it, or it could list the node again after removeNode. */
  let beating: Promise<void> = Promise.resolve();
  const beat = () =>
    (beating = registry.nodes
      // Pre-warmed sessions are load too: they hold capacity (atCapacity) until adopted or expired.
      .heartbeat({ nodeId, wsUrl, capacity: config.engineCapacity, load: calls.size + prewarmed.size, updatedAtMs: clock.now(), health: health(), ...(drain ? { draining: true } : {}), ...(recordsDown() ? { unavailable: true } : {}) }, heartbeatMs * 3)
      .catch((err: Error) => {
        logger.warn({ err }, 'registry heartbeat failed');
      }));
  // Control planes reuse a node listing for a moment (control-plane/voice/sessions.ts): a change
  // that must stop placements at once is announced as well.
  const announceNodeChange = () => registry.invalidations.publish(ENGINE_NODES_TOPIC, nodeId).then(() => undefined);
  const announceDraining = async () => {
    await beat();
    await announceNodeChange();
  };
  await beat();
  // A process that was frozen (SIGSTOP, a VM pause, a stall) longer than the control planes wait
  // before they judge a node lost has had its calls finalized `node_lost` and their sessions
  // forgotten elsewhere: going on would leave calls nobody can reach (text, end) writing into
  // ended records. Such a gap between two ticks ends them here too. A Redis outage does not: the
  // ticks keep coming, only the heartbeats fail, and no control plane judges a node meanwhile.
  const frozenAfterMs = heartbeatMs * 3 + config.nodeLostAfterS * 1000;
  let lastTickMs = clock.monotonicMs();
  const heartbeat = clock.setInterval(() => {
    const now = clock.monotonicMs();
    const gapMs = now - lastTickMs;
    lastTickMs = now;
    if (gapMs > frozenAfterMs && calls.size > 0) {
      logger.warn({ gapMs, calls: calls.size }, 'this node was frozen longer than the node-loss bound: its calls were finalized elsewhere; ending them');
      for (const a of [...calls.values()]) a.endCall(NODE_LOST_REASON);
    }
    void beat();
  }, heartbeatMs);

  const stopCommands = await registry.commands.serveCommands(nodeId, async (cmd: NodeCommand) => handleCommand(ctx, cmd));

  pacer.start();
  carrierPacer.start();
  logger.info({ nodeId, port, wsUrl }, 'media engine listening');
  return {
    nodeId,
    port,
    calls,
    pacer,
    carrierPacer,
    get draining() {
      return drain !== undefined;
    },
    drain(drainOpts) {
      const pendingSessions = async () => {
        // Just after a reconnect the registry may not hold the sessions written back yet: no count then.
        if (registry.reconnectedWithin?.(REGISTRY_RESTORE_GRACE_MS)) return undefined;
        const listed = await registry.sessions.pendingOn(nodeId);
        // Written back after a Redis restart by the replica that started them, some have ended here.
        const waiting = listed.filter((id) => !calls.has(id) && !prewarmed.hasStarted(id)).length;
        // A full page of those says nothing of the sessions behind it: unknown (the last count stands).
        return waiting === 0 && listed.length >= MAX_PENDING_LISTED ? undefined : waiting;
      };
      drain ??= startDrain({ clock, logger, calls, prewarmed: () => prewarmed.size, markDraining: announceDraining, pendingSessions }, drainOpts);
      return drain.done;
    },
    forceDrain() {
      drain?.force();
    },
    async close() {
      if (closed) return;
      closed = true;
      drain?.force();
      pacer.stop();
      carrierPacer.stop();
      clock.clearInterval(heartbeat);
      for (const a of [...calls.values()]) a.endCall(SHUTDOWN_REASON);
      prewarmed.closeAll();
      await stopCommands().catch(() => {});
      // Bounded: with the registry down a heartbeat can hang, and shutdown must not.
      await Promise.race([beating, new Promise<void>((r) => setTimeout(r, 1000).unref())]);
      await registry.nodes.removeNode(nodeId).catch(() => {});
      // A node that left cleanly is not down: the alerts' node_down counts nodes seen alive that
      // vanished without this (control-plane/alerts/metrics.ts). It paged on every deploy before.
      // Marked, not deleted: an evaluator tick that listed this node a moment ago cannot revive it.
      if (opts.sql) {
        await opts.sql`
          insert into alert_engine_nodes (node_id, last_seen_at, left_at) values (${nodeId}, now(), now())
          on conflict (node_id) do update set left_at = now()`.catch((err: Error) => logger.warn({ err }, 'could not record that this engine node left'));
      }
      await announceNodeChange();
      uws.us_listen_socket_close(listenSocket);
      if (!opts.outbound) await outbound.close();
      // After the calls ended: their last spans are in the batch.
      await tracing?.shutdown().catch((err: Error) => logger.warn({ err }, 'trace export at shutdown failed'));
    },
  };
}
