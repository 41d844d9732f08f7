/**
 * The control plane's metrics and its `GET /metrics` (Prometheus text format): request durations
 * by route template (never the raw path: ids would make one series per resource), the job
 * queue's depth sampled from the database at scrape time (bounded), and this process's failed
 * job attempts. Access: `shared/observability/metrics.ts`.
 */
import { Counter, Gauge, Histogram, Registry } from 'prom-client';
import type { Config } from '../../shared/config.js';
import type { Logger } from '../../shared/logger.js';
import { METRICS_CONTENT_TYPE, metricsAccess, refusal, renderMetrics } from '../../shared/observability/metrics.js';
import type { Jobs } from '../jobs/index.js';
import type { NodeReq, NodeRes } from './rest.js';
import { setRouteTemplate } from './request-url.js';

/** Route label of requests no route matched: one series for all of them, whatever the path. */
export const UNMATCHED_ROUTE = 'unmatched';
/** Longest a scrape waits for the job counts; past it the job gauges are left out of that scrape. */
const JOB_COUNT_TIMEOUT_MS = 1000;

export interface RequestObservation {
  /** `rest`, or the RPC protocol (`connect`, `grpc`, `grpc_web`). */
  protocol: string;
  method: string;
  /** REST: the route's template (`/api/v1/agents/:id`); RPC: `/<service>/<Method>`. */
  route: string;
  /** REST: the HTTP status; RPC: the Connect code name (`ok`, `not_found`, ...). */
  code: string;
  seconds: number;
}

export type RequestObserver = (o: RequestObservation) => void;

export interface ControlPlaneMetrics {
  registry: Registry;
  observe: RequestObserver;
  /** A raw handler for `GET /metrics` (declines other paths synchronously). */
  handler: (req: NodeReq, res: NodeRes) => boolean;
}

export function createControlPlaneMetrics(opts: { config: Config; logger: Logger; jobs: Jobs }): ControlPlaneMetrics {
  const { jobs, logger } = opts;
  const registry = new Registry();
  const registers = [registry];
  const requests = new Histogram({
    name: 'voiceplane_http_request_duration_seconds',
    help: 'Control-plane request duration by protocol, route template and result code',
    labelNames: ['protocol', 'method', 'route', 'code'],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers,
  });
  const sampleErrors = new Counter({ name: 'voiceplane_jobs_sample_errors_total', help: 'Scrapes whose job count query failed or timed out', registers });
  new Gauge({
    name: 'voiceplane_jobs',
    help: 'Jobs in the durable queue by queue and state (created, retry, active, failed), counted in the database',
    labelNames: ['queue', 'state'],
    registers,
    async collect() {
      this.reset();
      try {
        for (const r of await jobs.counts(JOB_COUNT_TIMEOUT_MS)) this.set({ queue: r.queue, state: r.state }, r.count);
      } catch (err) {
        sampleErrors.inc();
        logger.warn({ err }, 'job counts for metrics failed');
      }
    },
  });
  new Counter({
    name: 'voiceplane_jobs_failed_attempts_total',
    help: 'Job attempts whose handler threw in this process, by queue',
    labelNames: ['queue'],
    registers,
    collect() {
      this.reset();
      for (const [queue, n] of jobs.failedAttempts) this.inc({ queue }, n);
    },
  });
  const policy = { token: opts.config.metricsToken, production: opts.config.nodeEnv === 'production' };
  return {
    registry,
    observe: (o) => requests.observe({ protocol: o.protocol, method: o.method, route: o.route, code: o.code }, o.seconds),
    handler(req, res) {
      // Runs before the REST table on every request: declines without allocating.
      const url = req.url ?? '';
      if (req.method !== 'GET' || !url.startsWith('/metrics') || (url.length > 8 && url.charCodeAt(8) !== 63)) return false;
      setRouteTemplate(res, '/metrics');
      const auth = req.headers.authorization;
      const access = metricsAccess(policy, typeof auth === 'string' ? auth : undefined, req.socket?.remoteAddress ?? '');
      if (access !== 'ok') {
        const r = refusal(access);
        const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
        if (r.status === 401) headers['www-authenticate'] = 'Bearer';
        res.writeHead(r.status, headers);
        res.end(JSON.stringify({ error: { code: r.code, message: r.message } }));
        return true;
      }
      renderMetrics(registry).then(
        (text) => {
          res.writeHead(200, { 'content-type': METRICS_CONTENT_TYPE });
          res.end(text);
        },
        (err: Error) => {
          logger.error({ err }, 'metrics rendering failed');
          res.writeHead(500, { 'content-type': 'application/json; charset=utf-8' });
          res.end(JSON.stringify({ error: { code: 'INTERNAL', message: 'metrics failed' } }));
        },
      );
      return true;
    },
  };
}
