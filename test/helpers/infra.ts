/**
 * Test infrastructure: real Postgres and Redis (CI starts them). Each suite owns a schema and a
 * Redis key prefix and drops them in afterAll.
 */
import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { Writable } from 'node:stream';
import postgres from 'postgres';
import { loadConfig, type Config } from '../../shared/config.js';
import { createLogger, type Logger } from '../../shared/logger.js';
import { realClock, type Clock } from '../../shared/clock.js';
import { startInfra, type Infra } from '../../control-plane/infra.js';

export const TEST_DATABASE_URL = process.env.TEST_DATABASE_URL ?? 'postgres://postgres@127.0.0.1:5432/test';
export const TEST_REDIS_URL = process.env.TEST_REDIS_URL ?? 'redis://127.0.0.1:6379';
/**
 * Vendor fakes and tool servers run on loopback, which the outbound address policy refuses by
 * default: test configs allow it (suites testing the policy itself override this with '').
 */
export const TEST_OUTBOUND_ALLOW_CIDRS = '127.0.0.0/8,::1/128';

export function uniqueName(prefix: string): string {
  return `${prefix}_${randomBytes(5).toString('hex')}`;
}

/** A logger whose lines are kept in memory so tests can search them (e.g. for leaked secrets). */
export function captureLogger(level = 'debug'): { logger: Logger; lines: string[] } {
  const lines: string[] = [];
  const dest = new Writable({
    write(chunk, _enc, cb) {
      lines.push(String(chunk));
      cb();
    },
  });
  return { logger: createLogger({ level, destination: dest }), lines };
}

export interface TestInfra extends Infra {
  config: Config;
  schema: string;
  registryPrefix: string;
  logger: Logger;
  logLines: string[];
  clock: Clock;
}

export async function startTestInfra(overrides: Partial<Config> = {}, env: Record<string, string> = {}): Promise<TestInfra> {
  const schema = uniqueName('t');
  const registryPrefix = uniqueName('vpt');
  const config = loadConfig(
    { DATABASE_URL: TEST_DATABASE_URL, REDIS_URL: TEST_REDIS_URL, SECRETS_KEY: randomBytes(32).toString('hex'), LOG_LEVEL: 'debug', NODE_ENV: 'test', OUTBOUND_ALLOW_CIDRS: TEST_OUTBOUND_ALLOW_CIDRS, ...env },
    { httpPort: 0, enginePort: 0, host: '127.0.0.1', dataDir: `/tmp/${schema}`, seedDemo: false, ...overrides },
  );
  const { logger, lines } = captureLogger();
  // Embedded database (env DATABASE_URL: ''): its cluster lives in the generated DATA_DIR, removed
  // after postgres has stopped. A DATA_DIR the caller passed is the caller's to remove.
  const removeOwnDataDir = async () => {
    if (!config.databaseUrl && overrides.dataDir === undefined) await rm(config.dataDir, { recursive: true, force: true });
  };
  const infra = await startInfra(config, logger, realClock, { schema, registryPrefix }).catch(async (err: unknown) => {
    await removeOwnDataDir();
    throw err;
  });
  return {
    ...infra,
    config,
    schema,
    registryPrefix,
    logger,
    logLines: lines,
    clock: realClock,
    async close() {
      await infra.close();
      await dropSchema(schema);
      await removeOwnDataDir();
    },
  };
}

export async function dropSchema(schema: string): Promise<void> {
  const sql = postgres(TEST_DATABASE_URL, { max: 1, onnotice: () => {} });
  try {
    await sql.unsafe(`drop schema if exists "${schema}" cascade`);
    // The job queue's own schema (control-plane/jobs: `<schema>_boss`), when the suite started it.
    await sql.unsafe(`drop schema if exists "${schema}_boss" cascade`);
  } finally {
    await sql.end({ timeout: 5 });
  }
}
