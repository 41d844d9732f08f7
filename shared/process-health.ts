/**
 * What a process reports about itself on its heartbeat (issue 17, "System analytics"): CPU over
 * the interval since the previous sample, memory, and counters the caller keeps. Both halves use
 * it: the control plane stores its report in Postgres, an engine node puts it in its registry
 * heartbeat (the engine never touches Postgres; a collector job copies it, docs/system-analytics.md).
 * Sampled once per heartbeat, never on a request or audio path.
 */
import { getHeapStatistics } from 'node:v8';

/** One report, as carried in the registry and stored in `system_health`. */
export interface HealthReport {
  /** `healthy`, or `stopped`: the last report of a process that shut down cleanly. */
  status: 'healthy' | 'stopped';
  /** Percent of one core over the interval since the previous sample. */
  cpuUsage: number;
  memoryRssBytes: number;
  heapUsedBytes: number;
  /** Open client connections (HTTP sockets / voice sockets). */
  activeConnections: number;
  /** Live calls (engine); 0 for the control plane. */
  activeCalls: number;
  /** Counted since the process started. */
  requestCount: number;
  errorCount: number;
  /** Mean response time over the interval; null when nothing is measured or nothing was answered. */
  avgResponseMs: number | null;
  uptimeSeconds: number;
}

export type HealthCounters = Pick<HealthReport, 'activeConnections' | 'activeCalls' | 'requestCount' | 'errorCount' | 'avgResponseMs'>;

/**
 * RSS is read from /proc, which needs a file descriptor: with every descriptor taken (a flood of
 * idle connections) `process.memoryUsage()` throws EMFILE, and a sample must never take the process
 * down. Then only the heap is reported (RSS 0).
 */
function memory(): { rss: number; heapUsed: number } {
  try {
    const m = process.memoryUsage();
    return { rss: m.rss, heapUsed: m.heapUsed };
  } catch {
    return { rss: 0, heapUsed: getHeapStatistics().used_heap_size };
  }
}

/** CPU is a rate: each sample measures the time since the previous one (the first, since start). */
export class ProcessSampler {
  private lastCpu = process.cpuUsage();
  private lastAtMs: number;

  constructor(
    private readonly nowMs: () => number,
    private readonly startedAtMs = nowMs(),
  ) {
    this.lastAtMs = startedAtMs;
  }

  sample(counters: HealthCounters, status: HealthReport['status'] = 'healthy'): HealthReport {
    const now = this.nowMs();
    const cpu = process.cpuUsage(this.lastCpu);
    const elapsedMs = Math.max(1, now - this.lastAtMs);
    this.lastCpu = process.cpuUsage();
    this.lastAtMs = now;
    const mem = memory();
    return {
      status,
      cpuUsage: round2(((cpu.user + cpu.system) / 1000 / elapsedMs) * 100),
      memoryRssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      ...counters,
      uptimeSeconds: round2((now - this.startedAtMs) / 1000),
    };
  }
}

/**
 * Request counters of a server: counts since start, and the mean response time of the requests
 * answered since the last `take()` (so each report covers its own interval).
 */
export class RequestMeter {
  requests = 0;
  errors = 0;
  private sumMs = 0;
  private n = 0;

  /** One answered request; a 5xx is an error (4xx are the caller's). */
  record(status: number, ms: number): void {
    this.requests++;
    if (status >= 500) this.errors++;
    this.sumMs += ms;
    this.n++;
  }

  /** Mean ms since the previous call (null when none), and starts a new interval. */
  takeAvgMs(): number | null {
    const avg = this.n ? round2(this.sumMs / this.n) : null;
    this.sumMs = 0;
    this.n = 0;
    return avg;
  }
}

function round2(n: number): number {
  return Math.round(n * 100) / 100;
}
