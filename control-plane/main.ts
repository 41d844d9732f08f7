/**
 * Entry point. `ROLE=all` (default; what `npm start` runs) serves the control plane and a media
 * engine node in one process on the embedded defaults; `ROLE=control-plane` serves only the API.
 * The media engine alone is `node dist/media-engine/main.js`.
 */
import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { realClock } from '../shared/clock.js';
import { startInfra } from './infra.js';
import { startControlPlane } from './app.js';
import { startEngineNode } from '../media-engine/node.js';
import { ensureDemoOrgKey, seedDemo } from './seed.js';
import { startEngineRecords } from '../media-engine/records/index.js';
import { installCrashGuards } from '../shared/crash-guard.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger({ level: config.logLevel, name: 'voiceplane' });
  config = await ensureDemoOrgKey(config, logger);
  installCrashGuards(logger);
  const infra = await startInfra(config, logger, realClock);
  const deps = { config, logger, clock: realClock, ...infra };
  // One process: the engine's record writer and the control plane's SSE streams share one bus.
  const records = config.role === 'all' ? await startEngineRecords({ config, sql: infra.sql, logger, clock: realClock }) : undefined;
  const engine = records
    ? await startEngineNode({ config, logger, clock: realClock, registry: infra.registry, recorderFactory: records.writer.recorderFor })
    : undefined;
  const cp = await startControlPlane(deps, { bus: records?.bus });
  logger.info({ port: cp.port, engine: engine?.port, embeddedDb: infra.embeddedDb, registry: infra.registry.kind }, 'control plane listening');
  if (config.seedDemo) await seedDemo(config, cp.port, logger);

  let stopping = false;
  const stop = async (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    await cp.close();
    await engine?.close();
    await records?.close();
    await infra.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop('SIGINT'));
  process.on('SIGTERM', () => void stop('SIGTERM'));
}

main().catch((err) => {
  process.stderr.write(`fatal: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
