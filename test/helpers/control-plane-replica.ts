/**
 * A control-plane replica as a child process (test/helpers/control-plane-child.ts, built with
 * `buildChild`) on the test's Postgres schema, Redis prefix and secrets: the way the replica and
 * kill/restart suites get a second process they can SIGKILL. Resolves with the child's port line
 * (`{"port": ..., ...}`) once it listens.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_DATABASE_URL, TEST_REDIS_URL, type TestInfra } from './infra.js';

export interface Replica {
  proc: ChildProcess;
  port: number;
  /** The whole port line (e.g. `dialer_owner`). */
  ready: Record<string, any>;
  /** The infra's ORG_API_KEY, which the child seeds too (reads its dev mailbox: helpers/accounts.ts). */
  orgApiKey?: string;
}

/**
 * `env`: extra `CHILD_*` variables (jobs, campaigns, simtests tuning as JSON). `track` gets the
 * process at once, so a suite's afterAll can kill a child that never became ready.
 */
export function startReplica(childDir: string, infra: Pick<TestInfra, 'config' | 'schema' | 'registryPrefix'>, env: Record<string, string> = {}, track?: (proc: ChildProcess) => void): Promise<Replica> {
  const proc = spawn(process.execPath, [path.join(childDir, 'test/helpers/control-plane-child.js')], {
    env: {
      ...process.env,
      CHILD_DATABASE_URL: TEST_DATABASE_URL,
      CHILD_REDIS_URL: TEST_REDIS_URL,
      CHILD_SECRETS_KEY: infra.config.secretsKey,
      CHILD_OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8',
      CHILD_DATA_DIR: infra.config.dataDir,
      CHILD_SCHEMA: infra.schema,
      CHILD_REGISTRY_PREFIX: infra.registryPrefix,
      ...(infra.config.orgApiKey ? { CHILD_ORG_API_KEY: infra.config.orgApiKey } : {}),
      ...env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  track?.(proc);
  return new Promise((resolve, reject) => {
    proc.once('exit', (code) => reject(new Error(`control plane child exited early (${code})`)));
    // Log lines (pino, JSON) may come first: the port line is the one starting with `port`.
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      if (!line.startsWith('{"port":')) return;
      const ready = JSON.parse(line) as Record<string, any>;
      resolve({ proc, port: ready.port, ready, orgApiKey: infra.config.orgApiKey });
    });
  });
}
