/**
 * Media engine alone (production: many of these behind one Redis). Needs REDIS_URL: the
 * in-process registry only works when the control plane runs in the same process (`ROLE=all`,
 * the top-level `main.ts`).
 */
import { ConfigError, decodeKey } from '../shared/config.js';
import { SecretBox } from '../shared/secrets.js';
import { realClock } from '../shared/clock.js';
import { createRegistry } from '../shared/registry/index.js';
import { assertReachable, createSql } from '../shared/db/client.js';
import { runMain } from '../shared/run-main.js';
import { startEngineNode } from './node.js';
import { startEngineRecords } from './records/index.js';
import { createPgKnowledgeSearch } from './knowledge/search.js';
import { closeSharedFlitePool } from '../shared/providers/tts/flite-pool.js';

runMain(
  {
    name: 'media-engine',
    check: (config) => {
      if (!config.redisUrl) throw new ConfigError('REDIS_URL', 'is required for a standalone media engine (use ROLE=all for a single node)');
      if (!config.databaseUrl) throw new ConfigError('DATABASE_URL', 'is required for a standalone media engine (conversation records)');
    },
  },
  async (ctx) => {
    const { config, logger } = ctx;
    // Registered first, so it runs last: the local TTS workers end after the calls that use them.
    ctx.onClose(() => closeSharedFlitePool());
    const registry = await createRegistry({ redisUrl: config.redisUrl, prefix: config.registryPrefix, commandTimeoutMs: config.redisCommandTimeoutMs, logger });
    ctx.onClose(() => registry.close());
    const sql = createSql(config.databaseUrl!, { connectTimeoutMs: config.dbConnectTimeoutMs });
    ctx.onClose(() => sql.end({ timeout: 5 }));
    await assertReachable(sql);
    const records = await startEngineRecords({ config, sql, logger, clock: realClock });
    ctx.onClose(() => records.close());
    await ctx.checkpoint();
    // Connector tools open credentials sealed by the control plane: same SECRETS_KEY (validated by loadConfig).
    const key = config.secretsKey ? decodeKey(config.secretsKey) : undefined;
    if (!key) logger.warn('SECRETS_KEY unset: connector tools on calls answer an error (set it to the control plane key)');
    const secrets = key ? new SecretBox(key) : undefined;
    const node = await startEngineNode({ config, logger, clock: realClock, registry, recorderFactory: records.writer.recorderFor, recordsQueued: records.writer.queued, recordsFailingForMs: records.writer.failingForMs, sql, secrets, knowledge: createPgKnowledgeSearch(sql) });
    // SIGTERM (an orchestrator's stop, a rolling deploy) drains: no new sessions, live calls kept
    // up to DRAIN_TIMEOUT_S (docs/operations.md); SIGINT and a second signal end calls at once.
    ctx.onClose(async (signal) => {
      if (signal === 'SIGTERM') logger.info(await node.drain({ timeoutMs: config.drainTimeoutS * 1000 }), 'drained');
      await node.close();
    });
    ctx.onForce(() => node.forceDrain());
    ctx.started();
    await ctx.checkpoint();
  },
);
