/**
 * What a bench process reports about itself over a measurement window: CPU time (user + system,
 * as a share of one core), event-loop delay (perf_hooks histogram) and memory. Every process of a
 * benchmark (server and load generator) reports these, so a reader can tell which one saturated.
 */
import { readFileSync } from 'node:fs';
import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

export interface WindowStats {
  wallMs: number;
  /** CPU time over the window as % of one core (200 % = both cores of a 2-core machine). */
  cpuPct: number;
  cpuMs: number;
  /**
   * CPU time of the main thread alone (the event loop: JavaScript, uWS, the socket system calls),
   * without V8's GC and compiler threads and libuv's pool; % of one core. Linux (`/proc`), else NaN.
   */
  mainCpuPct: number;
  /** Event-loop delay over the window, ms beyond the sampling interval (`eldResolutionMs`). */
  eldP50Ms: number;
  eldP99Ms: number;
  eldMaxMs: number;
  rssBytes: number;
  heapUsedBytes: number;
  externalBytes: number;
  arrayBuffersBytes: number;
}

export class ProcessWindow {
  private readonly eld: IntervalHistogram;
  private cpu = process.cpuUsage();
  private mainTicks = mainThreadTicks();
  private t0 = performance.now();

  /** @param eldResolutionMs event-loop delay sampling resolution (default 10 ms) */
  constructor(readonly eldResolutionMs = 10) {
    this.eld = monitorEventLoopDelay({ resolution: eldResolutionMs });
    this.eld.enable();
  }

  /** Starts a new window. */
  reset(): void {
    this.cpu = process.cpuUsage();
    this.mainTicks = mainThreadTicks();
    this.t0 = performance.now();
    this.eld.reset();
  }

  /** Stats since the last reset (does not reset). */
  read(): WindowStats {
    const wallMs = performance.now() - this.t0;
    const cpu = process.cpuUsage(this.cpu);
    const cpuMs = (cpu.user + cpu.system) / 1000;
    const mem = process.memoryUsage();
    // The histogram records the whole timer interval (resolution included): report the delay beyond it.
    const ns = (v: number): number => (Number.isFinite(v) ? Math.max(0, v / 1e6 - this.eldResolutionMs) : NaN);
    const mainMs = ((mainThreadTicks() - this.mainTicks) * 1000) / CLOCK_TICKS_PER_S;
    return {
      wallMs,
      cpuMs,
      cpuPct: wallMs > 0 ? (100 * cpuMs) / wallMs : 0,
      mainCpuPct: wallMs > 0 ? (100 * mainMs) / wallMs : NaN,
      eldP50Ms: ns(this.eld.percentile(50)),
      eldP99Ms: ns(this.eld.percentile(99)),
      eldMaxMs: ns(this.eld.max),
      rssBytes: mem.rss,
      heapUsedBytes: mem.heapUsed,
      externalBytes: mem.external,
      arrayBuffersBytes: mem.arrayBuffers,
    };
  }

  close(): void {
    this.eld.disable();
  }
}

/** USER_HZ of /proc times: 100 on every Linux build Node runs on. */
const CLOCK_TICKS_PER_S = 100;

/** utime + stime of this process's main thread (its task id is the pid), in clock ticks; NaN off Linux. */
function mainThreadTicks(): number {
  try {
    const stat = readFileSync(`/proc/self/task/${process.pid}/stat`, 'utf8');
    // Fields after the command name (which may hold spaces, in parentheses): state is field 3, utime 14, stime 15.
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    return Number(rest[11]) + Number(rest[12]);
  } catch {
    return NaN;
  }
}

/** Runs a full GC when the process was started with --expose-gc (twice: weak callbacks free more). */
export function fullGc(): boolean {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (!gc) return false;
  gc();
  gc();
  return true;
}

/** Whole-machine CPU busy time from /proc/stat (all processes, all cores); Linux only. */
export class MachineWindow {
  private t0 = MachineWindow.sample();

  reset(): void {
    this.t0 = MachineWindow.sample();
  }

  /** Busy % of one core since reset (200 % = both cores of a 2-core machine busy). */
  read(): number {
    const t1 = MachineWindow.sample();
    const total = t1.total - this.t0.total;
    return total > 0 ? (100 * (t1.busy - this.t0.busy) * t1.cores) / total : NaN;
  }

  private static sample(): { busy: number; total: number; cores: number } {
    try {
      const lines = readFileSync('/proc/stat', 'utf8').split('\n');
      const f = lines[0]!.trim().split(/\s+/).slice(1).map(Number);
      const idle = (f[3] ?? 0) + (f[4] ?? 0);
      const total = f.reduce((a, b) => a + b, 0);
      return { busy: total - idle, total, cores: lines.filter((l) => /^cpu\d/.test(l)).length };
    } catch {
      return { busy: 0, total: 0, cores: 1 };
    }
  }
}
