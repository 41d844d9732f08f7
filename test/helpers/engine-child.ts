/**
 * A real media-engine process (`media-engine/main.ts`, transpiled by `buildChild`) for tests that
 * SIGTERM or SIGKILL engine nodes (issue 23). It runs the production entry unchanged: the test
 * chooses its configuration by environment (the suite's schema through `search_path` in
 * DATABASE_URL, its registry prefix through REGISTRY_PREFIX) and learns its port and node id from
 * the `media engine listening` log line.
 */
import { spawn, type ChildProcess } from 'node:child_process';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { TEST_DATABASE_URL } from './infra.js';

export interface EngineChild {
  proc: ChildProcess;
  nodeId: string;
  port: number;
  /** Resolves with the exit code (null after a signal) and the signal. */
  exited: Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>;
  /** Every JSON log line the process printed. */
  logs: Array<Record<string, unknown>>;
  /** The `... listening` line (a control plane's names its `dialerOwner`). */
  listening: Record<string, unknown>;
}

export interface EngineChildOptions {
  /** Output dir of `buildChild`. */
  dir: string;
  schema: string;
  registryPrefix: string;
  redisUrl: string;
  /** Extra environment (DRAIN_TIMEOUT_S, ...). */
  env?: Record<string, string>;
}

/** The suite's schema as a DATABASE_URL (postgres.js passes unknown query keys as connection parameters). */
export function schemaDatabaseUrl(schema: string): string {
  const u = new URL(TEST_DATABASE_URL);
  u.searchParams.set('search_path', `${schema},public`);
  return u.toString();
}

export function startEngineChild(o: EngineChildOptions): Promise<EngineChild> {
  return startServiceChild(o, 'media-engine/main.js', 'media engine listening', {
    ROLE: 'media-engine',
    ENGINE_PORT: '0',
  });
}

/**
 * A real control plane process (`control-plane/main.ts`): the API and its job workers (node
 * sweeper included) on the suite's schema and registry prefix. `secretsKey` must be the suite's
 * (encrypted provider keys are shared through the database). With `options` (control plane
 * tuning: job polling, dialer timings) it runs `test/helpers/control-plane-tuned.ts`, the same
 * start and shutdown with those options; build `dir` with that file then.
 */
export function startControlPlaneChild(o: EngineChildOptions & { secretsKey: string; options?: object }): Promise<EngineChild> {
  const entry = o.options ? 'test/helpers/control-plane-tuned.js' : 'control-plane/main.js';
  return startServiceChild(o, entry, 'control plane listening', {
    ROLE: 'control-plane',
    HTTP_PORT: '0',
    SECRETS_KEY: o.secretsKey,
    SEED_DEMO: 'false',
    ...(o.options ? { CHILD_OPTIONS: JSON.stringify(o.options) } : {}),
  });
}

function startServiceChild(o: EngineChildOptions, entry: string, listening: string, roleEnv: Record<string, string>): Promise<EngineChild> {
  const proc = spawn(process.execPath, [path.join(o.dir, entry)], {
    env: {
      ...process.env,
      DATABASE_URL: schemaDatabaseUrl(o.schema),
      REDIS_URL: o.redisUrl,
      REGISTRY_PREFIX: o.registryPrefix,
      HOST: '127.0.0.1',
      DATA_DIR: path.join(o.dir, 'data'),
      NODE_ENV: 'test',
      LOG_LEVEL: 'info',
      ...roleEnv,
      ...o.env,
    },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const logs: Array<Record<string, unknown>> = [];
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null; atMs: number }>((resolve) => {
    proc.once('exit', (code, signal) => resolve({ code, signal, atMs: performance.now() }));
  });
  return new Promise((resolve, reject) => {
    const early = () => reject(new Error(`${entry} exited before listening: ${JSON.stringify(logs.slice(-3))}`));
    proc.once('exit', early);
    createInterface({ input: proc.stdout! }).on('line', (line) => {
      let rec: Record<string, unknown>;
      try {
        rec = JSON.parse(line) as Record<string, unknown>;
      } catch {
        return;
      }
      logs.push(rec);
      if (rec.msg === listening) {
        proc.off('exit', early);
        resolve({ proc, nodeId: String(rec.nodeId ?? ''), port: Number(rec.port), exited, logs, listening: rec });
      }
    });
  });
}

/** GET on the engine's HTTP routes (`/ready`, `/live`). */
export async function probe(port: number, route: string): Promise<number> {
  const res = await fetch(`http://127.0.0.1:${port}${route}`);
  await res.arrayBuffer();
  return res.status;
}
