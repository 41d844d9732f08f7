/**
 * docs/grafana-dashboard.json queries only series the processes export: every metric name in its
 * expressions is declared by the engine's, the control plane's or the process registry.
 */
import fs from 'node:fs';
import { Registry } from 'prom-client';
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { createLogger } from '../../../shared/logger.js';
import { EngineMetrics } from '../../../shared/observability/engine-metrics.js';
import { renderMetrics } from '../../../shared/observability/metrics.js';
import { createControlPlaneMetrics } from '../../../control-plane/http/metrics.js';
import type { Jobs } from '../../../control-plane/jobs/index.js';

function declared(text: string): Set<string> {
  return new Set([...text.matchAll(/^# TYPE (\S+) (\w+)/gm)].flatMap(([, name, type]) => (type === 'histogram' ? [`${name}_bucket`, `${name}_count`, `${name}_sum`] : [name])));
}

describe('grafana dashboard', () => {
  it('uses only exported metric names', async () => {
    const engine = new EngineMetrics({ prewarmed: () => 0, recordsQueued: () => 0 });
    // Only the metric declarations are read here; the job counts come back empty.
    const jobs = { counts: async () => [], failedAttempts: new Map() } as unknown as Jobs;
    const cp = createControlPlaneMetrics({ config: loadConfig({}), logger: createLogger({ level: 'silent', name: 'test' }), jobs });
    const names = new Set([...declared(await renderMetrics(engine.registry)), ...declared(await renderMetrics(cp.registry)), ...declared(await renderMetrics(new Registry()))]);
    const dashboard = fs.readFileSync(new URL('../../../docs/grafana-dashboard.json', import.meta.url), 'utf8');
    const exprs = [...dashboard.matchAll(/"expr": "((?:[^"\\]|\\.)*)"/g)].map((m) => m[1]);
    expect(exprs.length).toBeGreaterThan(10);
    const used = new Set(exprs.flatMap((e) => [...e.matchAll(/\bvoiceplane_[a-z0-9_]+/g)].map((m) => m[0])));
    expect([...used].filter((n) => !names.has(n))).toEqual([]);
    // Every engine and control-plane family appears on the dashboard.
    for (const n of ['voiceplane_engine_active_calls', 'voiceplane_turn_latency_seconds_bucket', 'voiceplane_engine_frames_late_total', 'voiceplane_engine_jitter_buffer_depth_ms', 'voiceplane_http_request_duration_seconds_bucket', 'voiceplane_jobs', 'voiceplane_records_queue_depth']) {
      expect(used.has(n), n).toBe(true);
    }
  });
});
