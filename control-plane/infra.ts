/**
 * Infrastructure bring-up shared by `main.ts` and the tests: database (external or embedded),
 * migrations, registry, secrets key. Returns everything with one idempotent `close()`.
 */
import fs from 'node:fs/promises';
import path from 'node:path';
import { randomBytes, createHash } from 'node:crypto';
import type { Config } from '../shared/config.js';
import { decodeKey } from '../shared/config.js';
import type { Logger } from '../shared/logger.js';
import { createRegistry, type Registry } from '../shared/registry/index.js';
import { SecretBox } from '../shared/secrets.js';
import type { Clock } from '../shared/clock.js';
import { assertReachable, createSql, type Sql } from '../shared/db/client.js';
import { migrate } from './db/migrate.js';

export interface Infra {
  sql: Sql;
  registry: Registry;
  secrets: SecretBox;
  /** HS256 key for access tokens. */
  jwtKey: Uint8Array;
  embeddedDb: boolean;
  close(): Promise<void>;
}

export async function startInfra(config: Config, logger: Logger, clock: Clock, opts: { schema?: string; registryPrefix?: string } = {}): Promise<Infra> {
  const closers: Array<() => Promise<void>> = [];
  try {
    let url = config.databaseUrl;
    if (!url) {
      logger.info({ dataDir: config.dataDir }, 'DATABASE_URL unset: starting the embedded PostgreSQL under DATA_DIR/pg');
      // Loaded only here: the package must not be imported (it hooks process signals) when DATABASE_URL is set.
      const { startEmbeddedPostgres } = await import('./db/embedded.js');
      const pg = await startEmbeddedPostgres({ dataDir: config.dataDir, logger });
      closers.push(() => pg.close());
      url = pg.url;
    }
    // A real PostgreSQL either way (docs/adr/0002-embedded-postgres.md): the same pool size.
    const sql = createSql(url, {
      schema: opts.schema,
      max: 10,
      statementTimeoutMs: config.dbStatementTimeoutMs,
      acquireTimeoutMs: config.dbAcquireTimeoutMs,
      pipelineDepth: config.dbPipelineDepth,
      connectTimeoutMs: config.dbConnectTimeoutMs,
    });
    closers.push(() => sql.end({ timeout: 5 }));
    if (config.databaseUrl) await assertReachable(sql);
    if (opts.schema) await sql.unsafe(`create schema if not exists "${opts.schema}"`);
    const applied = await migrate(sql);
    if (applied.length) logger.info({ applied }, 'migrations applied');
    if (!config.redisUrl) logger.info('REDIS_URL unset: in-process session registry (single node only)');
    const registry = await createRegistry({ redisUrl: config.redisUrl, prefix: opts.registryPrefix ?? config.registryPrefix, clock, commandTimeoutMs: config.redisCommandTimeoutMs, logger });
    closers.push(() => registry.close());
    const key = await loadSecretsKey(config, logger);
    const jwtKey = config.jwtSecret
      ? new TextEncoder().encode(config.jwtSecret)
      : createHash('sha256').update('jwt:').update(key).digest();
    let closed = false;
    return {
      sql,
      registry,
      secrets: new SecretBox(key),
      jwtKey,
      embeddedDb: !config.databaseUrl,
      async close() {
        if (closed) return;
        closed = true;
        for (const c of closers.reverse()) await c().catch(() => {});
      },
    };
  } catch (err) {
    for (const c of closers.reverse()) await c().catch(() => {});
    throw err;
  }
}

/** SECRETS_KEY, else a key generated once under DATA_DIR (with a warning: back it up). */
async function loadSecretsKey(config: Config, logger: Logger): Promise<Buffer> {
  if (config.secretsKey) return decodeKey(config.secretsKey)!;
  const file = path.join(config.dataDir, 'secrets.key');
  try {
    const existing = decodeKey((await fs.readFile(file, 'utf8')).trim());
    if (existing) return existing;
  } catch {
    // not there yet
  }
  if (config.nodeEnv === 'production') throw new Error('invalid configuration: SECRETS_KEY must be set in production');
  await fs.mkdir(config.dataDir, { recursive: true });
  const key = randomBytes(32);
  await fs.writeFile(file, key.toString('hex') + '\n', { mode: 0o600 });
  logger.warn({ file }, 'SECRETS_KEY unset: generated a secrets key under DATA_DIR; set SECRETS_KEY in production');
  return key;
}
