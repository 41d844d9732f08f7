/**
 * The Prometheus side shared by both processes: one registry per component (a control plane, an
 * engine node: tests start several in one process, and prom-client refuses a metric name twice
 * in one registry) plus one per process for prom-client's default metrics (event-loop delay,
 * heap, GC, CPU), appended to every component's scrape.
 */
import { timingSafeEqual, createHash } from 'node:crypto';
import { collectDefaultMetrics, Registry } from 'prom-client';

let processRegistry: Registry | undefined;

/** Default metrics start one event-loop delay monitor per process, so they are registered once. */
function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry, prefix: 'voiceplane_process_' });
  }
  return processRegistry;
}

export const METRICS_CONTENT_TYPE = Registry.PROMETHEUS_CONTENT_TYPE;

/** The text a scrape of `component` returns: its metrics, then the process's. */
export async function renderMetrics(component: Registry): Promise<string> {
  const [own, proc] = await Promise.all([component.metrics(), processMetrics().metrics()]);
  return `${own}\n${proc}`;
}

export type MetricsAccess = 'ok' | 'unauthorized' | 'forbidden' | 'disabled';

export interface MetricsAccessPolicy {
  /** METRICS_TOKEN: when set, every scrape must present `Authorization: Bearer <token>`. */
  token?: string;
  /** Without a token: development serves loopback peers only; production serves nobody. */
  production: boolean;
}

/**
 * Who may scrape. A token, when configured, is the only check (the peer address means nothing
 * behind a proxy). Without one the endpoint is a development convenience: loopback peers only,
 * and off entirely in production so that an unset variable never publishes call volumes.
 */
export function metricsAccess(policy: MetricsAccessPolicy, authorization: string | undefined, peer: string): MetricsAccess {
  if (policy.token !== undefined) {
    const m = /^Bearer\s+(\S+)\s*$/i.exec(authorization ?? '');
    return m && sameSecret(m[1], policy.token) ? 'ok' : 'unauthorized';
  }
  if (policy.production) return 'disabled';
  return isLoopback(peer) ? 'ok' : 'forbidden';
}

/** Constant-time comparison of two secrets of any length (hashed to equal lengths first). */
function sameSecret(a: string, b: string): boolean {
  return timingSafeEqual(createHash('sha256').update(a).digest(), createHash('sha256').update(b).digest());
}

function isLoopback(addr: string): boolean {
  return addr === '::1' || addr.startsWith('127.') || addr.startsWith('::ffff:127.') || addr === '0000:0000:0000:0000:0000:0000:0000:0001';
}

/** The HTTP answer of a refused scrape (status, error envelope code, message). */
export function refusal(access: Exclude<MetricsAccess, 'ok'>): { status: number; code: string; message: string } {
  switch (access) {
    case 'unauthorized':
      return { status: 401, code: 'UNAUTHORIZED', message: 'metrics require a bearer token (METRICS_TOKEN)' };
    case 'forbidden':
      return { status: 403, code: 'FORBIDDEN', message: 'metrics without METRICS_TOKEN are served to loopback clients only' };
    case 'disabled':
      return { status: 404, code: 'NOT_FOUND', message: 'no route GET /metrics (set METRICS_TOKEN to enable it)' };
  }
}
