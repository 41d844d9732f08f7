/**
 * `GET /metrics` on the engine's port (Prometheus text format). The access rule is the control
 * plane's (`shared/observability/metrics.ts`): METRICS_TOKEN when set, else loopback only in
 * development and nothing in production.
 */
import type { Registry } from 'prom-client';
import { METRICS_CONTENT_TYPE, metricsAccess, refusal, renderMetrics, type MetricsAccessPolicy } from '../shared/observability/metrics.js';
import type { TemplatedApp } from './uws.js';

export function registerMetricsRoute(app: TemplatedApp, registry: Registry, policy: MetricsAccessPolicy): void {
  app.get('/metrics', (res, req) => {
    // uWS: request data is valid only now, before anything is awaited.
    const access = metricsAccess(policy, req.getHeader('authorization') || undefined, Buffer.from(res.getRemoteAddressAsText()).toString());
    if (access !== 'ok') {
      const r = refusal(access);
      res.writeStatus(`${r.status} ${statusText(r.status)}`);
      if (r.status === 401) res.writeHeader('www-authenticate', 'Bearer');
      res.writeHeader('content-type', 'application/json').end(JSON.stringify({ error: { code: r.code, message: r.message } }));
      return;
    }
    let aborted = false;
    res.onAborted(() => (aborted = true));
    renderMetrics(registry).then(
      (text) => {
        if (!aborted) res.cork(() => res.writeHeader('content-type', METRICS_CONTENT_TYPE).end(text));
      },
      (err: Error) => {
        if (!aborted) res.cork(() => res.writeStatus('500 Internal Server Error').writeHeader('content-type', 'application/json').end(JSON.stringify({ error: { code: 'INTERNAL', message: err.message } })));
      },
    );
  });
}

function statusText(status: number): string {
  return status === 401 ? 'Unauthorized' : status === 403 ? 'Forbidden' : 'Not Found';
}
