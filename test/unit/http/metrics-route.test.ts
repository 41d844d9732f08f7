import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { createLogger } from '../../../shared/logger.js';
import { createControlPlaneMetrics } from '../../../control-plane/http/metrics.js';
import type { Jobs } from '../../../control-plane/jobs/index.js';
import type { NodeReq, NodeRes } from '../../../control-plane/http/rest.js';

/** The `/metrics` raw handler sees every request first: it takes its own path only. */
describe('the /metrics raw handler', () => {
  const jobs = { counts: async () => [], failedAttempts: new Map() } as unknown as Jobs;
  const metrics = createControlPlaneMetrics({ config: loadConfig({}), logger: createLogger({ level: 'silent' }), jobs });

  const answer = (method: string, url: string): Promise<{ taken: boolean; status?: number; body?: string }> =>
    new Promise((resolve) => {
      let status: number | undefined;
      const res = {
        writeHead: (s: number) => (status = s),
        end: (body: string) => resolve({ taken: true, status, body }),
      } as unknown as NodeRes;
      const req = { method, url, headers: {}, socket: { remoteAddress: '127.0.0.1' } } as unknown as NodeReq;
      if (!metrics.handler(req, res)) resolve({ taken: false });
    });

  it('answers GET /metrics, with or without a query string', async () => {
    for (const url of ['/metrics', '/metrics?name=x']) {
      const r = await answer('GET', url);
      expect(r.taken).toBe(true);
      expect(r.status).toBe(200);
      expect(r.body).toContain('voiceplane_http_request_duration_seconds');
    }
  });

  it('declines every other path and method', async () => {
    for (const [method, url] of [['GET', '/metricsx'], ['GET', '/metrics/'], ['GET', '/api/v1/agents/a'], ['POST', '/metrics'], ['GET', '/']]) {
      expect(await answer(method!, url!)).toEqual({ taken: false });
    }
  });
});
