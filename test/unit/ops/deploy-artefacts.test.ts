/**
 * Issue 23: the deploy artefacts (`Dockerfile`, `deploy/kubernetes/`) cannot be run here (no
 * Docker, no Kubernetes), so this keeps them honest against the code instead:
 * - every variable they set is one `shared/config.ts` reads (a typo would be silently ignored),
 *   and the values in `config.env` pass `loadConfig` (a bad one would stop every pod at start);
 * - every variable `shared/config.ts` reads is in the README's configuration table;
 * - the engine's termination grace period outlasts DRAIN_TIMEOUT_S plus the goodbye and shutdown;
 * - probes use the routes both halves serve (`/ready`, `/live`) on the configured ports;
 * - the image runs as a non-root user, installs production dependencies only, has a health check
 *   and starts entries that exist in the build.
 * The variable list comes from running `loadConfig` over an environment that records every read.
 */
import fs from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const read = (rel: string) => fs.readFileSync(path.join(ROOT, rel), 'utf8');
const K8S = 'deploy/kubernetes';

/** Every variable name `loadConfig` looks up. */
function configVariables(): Set<string> {
  const seen = new Set<string>();
  const env = new Proxy({} as Record<string, string | undefined>, {
    get: (_, key) => {
      if (typeof key === 'string') seen.add(key);
      return undefined;
    },
    ownKeys: () => [],
  });
  loadConfig(env);
  return seen;
}

/** `KEY=value` lines of an env file (comments and blanks skipped). */
function envFile(rel: string): Map<string, string> {
  const out = new Map<string, string>();
  for (const line of read(rel).split('\n')) {
    const t = line.trim();
    if (!t || t.startsWith('#')) continue;
    const eq = t.indexOf('=');
    expect(eq, `${rel}: "${t}"`).toBeGreaterThan(0);
    out.set(t.slice(0, eq), t.slice(eq + 1));
  }
  return out;
}

/** Names set in a manifest's `env:` lists (`- { name: X, ... }` or `- name: X`). */
function manifestEnvNames(rel: string): string[] {
  return [...read(rel).matchAll(/-\s*(?:\{\s*)?name:\s*([A-Z][A-Z0-9_]*)\b/g)].map((m) => m[1]!);
}

/** Variables that only exist in a manifest (inputs of other values), never read by the code. */
const MANIFEST_ONLY = new Set(['POD_NAME']);

describe('deploy artefacts stay in sync with shared/config.ts', () => {
  const vars = configVariables();

  it('reads the variable list from loadConfig (sanity)', () => {
    for (const v of ['DATABASE_URL', 'REDIS_URL', 'DRAIN_TIMEOUT_S', 'NODE_LOST_AFTER_S', 'REGISTRY_PREFIX', 'ENGINE_PORT']) expect(vars.has(v), v).toBe(true);
  });

  it('sets only variables the code reads, with values it accepts', () => {
    const config = envFile(`${K8S}/config.env`);
    const secret = envFile(`${K8S}/secret.env.example`);
    for (const name of [...config.keys(), ...secret.keys()]) expect(vars.has(name), `${name} is not read by shared/config.ts`).toBe(true);
    for (const file of ['control-plane.yaml', 'media-engine.yaml']) {
      for (const name of manifestEnvNames(`${K8S}/${file}`)) {
        if (!MANIFEST_ONLY.has(name)) expect(vars.has(name), `${file}: ${name} is not read by shared/config.ts`).toBe(true);
      }
    }
    // The shipped values start a process (placeholders of the secret example aside).
    const cfg = loadConfig({ ...Object.fromEntries(config), REDIS_URL: 'redis://redis:6379', DATABASE_URL: 'postgres://u:p@db:5432/v', SECRETS_KEY: 'a'.repeat(64), SMTP_URL: 'smtp://mail:25' });
    expect(cfg.nodeEnv).toBe('production');
  });

  it('lists every configuration variable in the README table', () => {
    const readme = read('README.md');
    // Names in the first cell of each row (one row may name two: `TWILIO_ACCOUNT_SID`, `TWILIO_AUTH_TOKEN`).
    const firstCells = [...readme.matchAll(/^\| (`[^|]*)\|/gm)].map((m) => m[1]!);
    const table = new Set(firstCells.flatMap((cell) => [...cell.matchAll(/`([A-Z][A-Z0-9_<>]*)`/g)].map((m) => m[1]!)));
    for (const v of vars) expect(table.has(v), `README configuration table lacks ${v}`).toBe(true);
  });

  it('gives a draining engine node longer than DRAIN_TIMEOUT_S before the kill', () => {
    const engine = read(`${K8S}/media-engine.yaml`);
    const grace = Number(/terminationGracePeriodSeconds:\s*(\d+)/.exec(engine)?.[1]);
    const drainS = Number(envFile(`${K8S}/config.env`).get('DRAIN_TIMEOUT_S') ?? loadConfig({}).drainTimeoutS);
    // The goodbye after the deadline (<= 10 s) and the shutdown itself (bounded waits, <= 30 s).
    expect(grace).toBeGreaterThanOrEqual(drainS + 40);
  });

  it('probes the routes and ports the processes serve', () => {
    const defaults = loadConfig({});
    const engine = read(`${K8S}/media-engine.yaml`);
    expect(engine).toContain(`containerPort: ${defaults.enginePort}`);
    expect(engine).toMatch(/readinessProbe:\s*\n\s*httpGet: \{ path: \/ready, port: ws \}/);
    expect(engine).toMatch(/livenessProbe:\s*\n\s*httpGet: \{ path: \/live, port: ws \}/);
    expect(engine).toContain('command: ["node", "dist/media-engine/main.js"]');
    const cp = read(`${K8S}/control-plane.yaml`);
    expect(cp).toContain(`containerPort: ${defaults.httpPort}`);
    expect(cp).toMatch(/readinessProbe:\s*\n\s*httpGet: \{ path: \/ready, port: http \}/);
    expect(cp).toMatch(/livenessProbe:\s*\n\s*httpGet: \{ path: \/live, port: http \}/);
    expect(cp).toContain('command: ["node", "dist/control-plane/main.js"]');
    for (const kind of ['Deployment', 'StatefulSet', 'HorizontalPodAutoscaler', 'PodDisruptionBudget', 'Service']) expect(cp + engine).toContain(`kind: ${kind}`);
    const kustomization = read(`${K8S}/kustomization.yaml`);
    for (const f of ['control-plane.yaml', 'media-engine.yaml', 'config.env', 'secret.env']) expect(kustomization).toContain(f);
  });

  it('builds a non-root image with production dependencies, a health check and existing entries', () => {
    const docker = read('Dockerfile');
    expect(docker).toMatch(/^FROM .* AS build$/m);
    expect(docker).toContain('npm ci --omit=dev');
    expect(docker).toMatch(/^USER node$/m);
    expect(docker).toMatch(/^HEALTHCHECK /m);
    expect(docker).toMatch(/EXPOSE 8080 8081/);
    const defaults = loadConfig({});
    expect([defaults.httpPort, defaults.enginePort]).toEqual([8080, 8081]);
    // Every entry the image or the manifests start is a source the build compiles.
    for (const entry of ['main.ts', 'control-plane/main.ts', 'media-engine/main.ts']) expect(fs.existsSync(path.join(ROOT, entry)), entry).toBe(true);
    for (const m of docker.matchAll(/dist\/([\w/-]+)\.js/g)) expect(fs.existsSync(path.join(ROOT, `${m[1]}.ts`)), m[0]).toBe(true);
  });
});
