/**
 * The process `npm start` runs. `ROLE=all` (the default): the control plane and a media engine
 * node in one process, on the embedded defaults, sharing the registry, the database pool and the
 * live transcript bus. `ROLE=control-plane`: the API only, as `control-plane/main.ts`.
 *
 * This is the one file that imports both halves (`control-plane/` and `media-engine/` never import
 * each other). The engine is imported lazily so that `ROLE=control-plane` does not load
 * uWebSockets.js through this entry either.
 */
import { realClock } from './shared/clock.js';
import { ConfigError } from './shared/config.js';
import { runMain } from './shared/run-main.js';
import { runControlPlane, type Attach } from './control-plane/run.js';

/** ROLE=all: the engine's record writer and one engine node, on the control plane's infrastructure. */
const attachEngine: Attach = async (ctx, config, infra) => {
  const [{ startEngineRecords }, { startEngineNode }, { createPgKnowledgeSearch }, { closeSharedFlitePool }] = await Promise.all([
    import('./media-engine/records/index.js'),
    import('./media-engine/node.js'),
    import('./media-engine/knowledge/search.js'),
    import('./shared/providers/tts/flite-pool.js'),
  ]);
  const { logger } = ctx;
  const records = await startEngineRecords({ config, sql: infra.sql, logger, clock: realClock });
  ctx.onClose(() => records.close());
  await ctx.checkpoint();
  const engine = await startEngineNode({
    config,
    logger,
    clock: realClock,
    registry: infra.registry,
    recorderFactory: records.writer.recorderFor,
    recordsQueued: records.writer.queued,
    recordsFailingForMs: records.writer.failingForMs,
    // Connector tools read connections and open their credentials with the control plane's key.
    sql: infra.sql,
    secrets: infra.secrets,
    knowledge: createPgKnowledgeSearch(infra.sql),
  });
  // Before engine.close in the list, so after it at shutdown: the local TTS workers end after the calls.
  ctx.onClose(() => closeSharedFlitePool());
  ctx.onClose(() => engine.close());
  ctx.onForce(() => engine.forceDrain());
  // SIGTERM drains the engine's calls while the API still serves them (DRAIN_TIMEOUT_S); Ctrl-C
  // (SIGINT) and a second signal end them at once.
  const beforeApiClose = async (signal: string) => {
    if (signal === 'SIGTERM') logger.info(await engine.drain({ timeoutMs: config.drainTimeoutS * 1000 }), 'drained');
  };
  return { bus: records.bus, enginePort: engine.port, beforeApiClose };
};

runMain(
  {
    name: 'voiceplane',
    check: (config) => {
      // Refused rather than quietly serving the API without any engine.
      if (config.role === 'media-engine') throw new ConfigError('ROLE', 'must be all or control-plane for dist/main.js (the engine alone: node dist/media-engine/main.js)');
    },
  },
  (ctx) => runControlPlane(ctx, ctx.config.role === 'all' ? attachEngine : undefined),
);
