/**
 * System analytics query checks (pure): each route takes only its own parameters, the range is
 * the pipeline analytics one (inclusive UTC days, 30 by default, at most 92), and process health
 * sampling / request metering report what they were fed.
 */
import { describe, expect, it, vi } from 'vitest';
import { AppError } from '../../../shared/errors.js';
import { assertKnownParams, parseQuery } from '../../../control-plane/system-analytics/params.js';
import { ProcessSampler, RequestMeter } from '../../../shared/process-health.js';

const NOW = Date.parse('2026-03-12T15:30:00Z');

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (e) {
    expect(e).toBeInstanceOf(AppError);
    expect((e as AppError).code).toBe('INVALID_REQUEST');
    return (e as AppError).options.details?.[0]?.field;
  }
  return undefined;
}

describe('parseQuery', () => {
  it('defaults to the 30 days ending today (UTC), end exclusive at the next midnight', () => {
    const q = parseQuery('latency', {}, NOW);
    expect(q).toMatchObject({ from: '2026-02-11', to: '2026-03-12' });
    expect(q.start.toISOString()).toBe('2026-02-11T00:00:00.000Z');
    expect(q.end.toISOString()).toBe('2026-03-13T00:00:00.000Z');
  });

  it('normalises ids and keeps filters', () => {
    const q = parseQuery('usage', { agentId: '0190A5E4-0000-7000-8000-000000000001', userId: ' u1 ' }, NOW);
    expect(q).toMatchObject({ agentId: '0190a5e4-0000-7000-8000-000000000001', userId: 'u1' });
  });

  it.each([
    ['usage', { sessionId: 's' }, 'session_id'],
    ['latency', { userId: 'u' }, 'user_id'],
    ['tool-calls', { userId: 'u' }, 'user_id'],
    ['latency', { agentId: 'x' }, 'agent_id'],
    ['latency', { from: '2026-3-1' }, 'from'],
    ['latency', { from: '2026-03-01', to: '2026-06-01' }, 'to'],
  ] as const)('%s %j -> 400 %s', (route, req, field) => {
    expect(fieldOf(() => parseQuery(route, req, NOW))).toBe(field);
  });

  it('accepts exactly 92 days', () => {
    expect(parseQuery('tool-calls', { from: '2026-01-01', to: '2026-04-02' }, NOW).to).toBe('2026-04-02');
  });
});

describe('assertKnownParams', () => {
  it('names the first unknown key', () => {
    const q = (...keys: string[]) => Object.fromEntries(keys.map((k) => [k, 'x']));
    expect(fieldOf(() => assertKnownParams('latency', q('agent_id', 'agnt_id')))).toBe('agnt_id');
    expect(fieldOf(() => assertKnownParams('usage', q('user_id', 'from', 'to', 'workspace_id', 'agent_id')))).toBeUndefined();
  });

  it('names a key sent without a value (it would read as no filter)', () => {
    expect(fieldOf(() => assertKnownParams('usage', { from: '2026-11-01', agent_id: '' }))).toBe('agent_id');
    expect(fieldOf(() => assertKnownParams('latency', { session_id: '  ' }))).toBe('session_id');
  });
});

describe('RequestMeter', () => {
  it('counts since start, 5xx as errors, and averages per interval', () => {
    const m = new RequestMeter();
    m.record(200, 10);
    m.record(404, 20);
    m.record(503, 30);
    expect([m.requests, m.errors, m.takeAvgMs()]).toEqual([3, 1, 20]);
    expect(m.takeAvgMs()).toBeNull();
    m.record(200, 5);
    expect([m.requests, m.takeAvgMs()]).toEqual([4, 5]);
  });
});

describe('ProcessSampler', () => {
  it('reports the counters given, memory, and uptime from the injected clock', () => {
    let now = 1_000_000;
    const s = new ProcessSampler(() => now);
    now += 2_500;
    const r = s.sample({ activeConnections: 4, activeCalls: 1, requestCount: 9, errorCount: 2, avgResponseMs: 3.5 }, 'stopped');
    expect(r).toMatchObject({ status: 'stopped', activeConnections: 4, activeCalls: 1, requestCount: 9, errorCount: 2, avgResponseMs: 3.5, uptimeSeconds: 2.5 });
    expect(r.memoryRssBytes).toBeGreaterThan(r.heapUsedBytes);
    expect(r.cpuUsage).toBeGreaterThanOrEqual(0);
  });

  it('with every file descriptor taken (memoryUsage throws EMFILE) it reports the heap and RSS 0 instead of throwing', () => {
    const spy = vi.spyOn(process, 'memoryUsage').mockImplementation(() => {
      throw Object.assign(new Error('EMFILE: too many open files, uv_resident_set_memory'), { code: 'EMFILE' });
    });
    try {
      const r = new ProcessSampler(() => 0).sample({ activeConnections: 0, activeCalls: 0, requestCount: 0, errorCount: 0, avgResponseMs: null });
      expect(r.memoryRssBytes).toBe(0);
      expect(r.heapUsedBytes).toBeGreaterThan(0);
    } finally {
      spy.mockRestore();
    }
  });
});
