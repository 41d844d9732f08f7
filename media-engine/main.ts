/**
 * Media engine alone (production: many of these behind one Redis). Needs REDIS_URL: the
 * in-process registry only works when the control plane runs in the same process (`ROLE=all`).
 */
import { ConfigError, loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { realClock } from '../shared/clock.js';
import { createRegistry } from '../shared/registry/index.js';
import { startEngineNode } from './node.js';
import { startEngineRecords } from './records/index.js';
import { createSql } from '../control-plane/db/client.js';
import { installCrashGuards } from '../shared/crash-guard.js';

async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
    if (!config.redisUrl) throw new ConfigError('REDIS_URL', 'is required for a standalone media engine (use ROLE=all for a single node)');
    if (!config.databaseUrl) throw new ConfigError('DATABASE_URL', 'is required for a standalone media engine (conversation records)');
  } catch (e) {
    if (e instanceof ConfigError) {
      process.stderr.write(`${e.message}\n`);
      process.exit(2);
    }
    throw e;
  }
  const logger = createLogger({ level: config.logLevel, name: 'media-engine' });
  installCrashGuards(logger);
  const registry = await createRegistry({ redisUrl: config.redisUrl });
  const sql = createSql(config.databaseUrl!);
  const records = await startEngineRecords({ config, sql, logger, clock: realClock });
  const node = await startEngineNode({ config, logger, clock: realClock, registry, recorderFactory: records.writer.recorderFor });
  const stop = async () => {
    await node.close();
    await records.close();
    await sql.end({ timeout: 5 });
    await registry.close();
    process.exit(0);
  };
  process.on('SIGINT', () => void stop());
  process.on('SIGTERM', () => void stop());
}

main().catch((err) => {
  process.stderr.write(`fatal: ${(err as Error)?.stack ?? String(err)}\n`);
  process.exit(1);
});
