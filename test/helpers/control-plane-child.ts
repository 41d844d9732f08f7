/**
 * A control plane in its own process, for tests that kill it (SIGKILL) mid-work. Configuration
 * comes from the environment the test passes (the same database schema, Redis prefix and secrets
 * key as the test's own infra). Prints `{"port": n}` on stdout when it serves.
 */
import { loadConfig } from '../../shared/config.js';
import { createLogger } from '../../shared/logger.js';
import { realClock } from '../../shared/clock.js';
import { startInfra } from '../../control-plane/infra.js';
import { startControlPlane } from '../../control-plane/app.js';

const env = process.env;
const config = loadConfig(
  {
    DATABASE_URL: env.CHILD_DATABASE_URL,
    REDIS_URL: env.CHILD_REDIS_URL,
    SECRETS_KEY: env.CHILD_SECRETS_KEY,
    OUTBOUND_ALLOW_CIDRS: env.CHILD_OUTBOUND_ALLOW_CIDRS,
    // The test infra's organization key: the same one every replica seeds (reads the dev mailbox).
    ...(env.CHILD_ORG_API_KEY ? { ORG_API_KEY: env.CHILD_ORG_API_KEY } : {}),
    LOG_LEVEL: 'warn',
    NODE_ENV: 'test',
    // Campaign suites dial through the carrier simulator.
    ...(env.CHILD_TWILIO_API_BASE_URL ? { TWILIO_API_BASE_URL: env.CHILD_TWILIO_API_BASE_URL } : {}),
  },
  { httpPort: 0, host: '127.0.0.1', dataDir: env.CHILD_DATA_DIR!, seedDemo: false },
);
const logger = createLogger({ level: 'warn', name: 'child' });
const infra = await startInfra(config, logger, realClock, { schema: env.CHILD_SCHEMA, registryPrefix: env.CHILD_REGISTRY_PREFIX });
const cp = await startControlPlane(
  { config, logger, clock: realClock, ...infra },
  { port: 0, host: '127.0.0.1', jobs: JSON.parse(env.CHILD_JOBS ?? '{}'), campaigns: JSON.parse(env.CHILD_CAMPAIGNS ?? '{}'), simTests: JSON.parse(env.CHILD_SIMTESTS ?? '{}') },
);
process.stdout.write(`${JSON.stringify({ port: cp.port, dialer_owner: cp.campaigns.dialer.owner })}\n`);
