/**
 * Lateness of an agent's audio as its receiver (a simulated carrier) sees it, for engines in
 * other processes where the bench's in-process probe (bench/engine/probe.ts) cannot attach.
 * Within one continuous agent run the engine paces 8 kHz G.711 at real time, so the frame that
 * follows `b` bytes of the run is due at T0 + b / 8 ms. T0 is the earliest such origin over the
 * steady frames (the first `leadFrames` go out in the lead burst, ahead of time); a frame's
 * lateness is its own origin minus T0. This includes the network and the receiving process's own
 * scheduling, so only comparisons within one run (baseline vs a window) mean anything.
 */

export interface LatenessSample {
  atMs: number;
  lateMs: number;
  /** 20 ms frames the sample stands for (a carrier message may carry several: CARRIER_OUT_MESSAGE_MS); default 1. */
  frames?: number;
}

export interface WindowStats {
  frames: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/** `arrivals`: [arrival time, payload bytes] of one run's messages, in order (lateness per message, frames counted by bytes). */
export function runLateness(arrivals: ReadonlyArray<readonly [number, number]>, leadFrames = 10, bytesPerMs = 8): LatenessSample[] {
  const origins: LatenessSample[] = [];
  let bytes = 0;
  arrivals.forEach(([atMs, n], i) => {
    if (i >= leadFrames) origins.push({ atMs, lateMs: atMs - bytes / bytesPerMs, frames: Math.max(1, Math.round(n / (bytesPerMs * 20))) });
    bytes += n;
  });
  const t0 = Math.min(...origins.map((o) => o.lateMs));
  return origins.map((o) => ({ atMs: o.atMs, lateMs: o.lateMs - t0, frames: o.frames }));
}

/** Percentiles of the samples that arrived within [fromMs, toMs). */
export function windowStats(samples: LatenessSample[], fromMs: number, toMs: number): WindowStats {
  const inWindow = samples.filter((s) => s.atMs >= fromMs && s.atMs < toMs);
  const late = inWindow.map((s) => s.lateMs).sort((a, b) => a - b);
  const frames = inWindow.reduce((n, s) => n + (s.frames ?? 1), 0);
  const at = (q: number) => (late.length ? late[Math.min(late.length - 1, Math.floor(q * late.length))]! : 0);
  return { frames, p50Ms: round(at(0.5)), p99Ms: round(at(0.99)), maxMs: round(late.length ? late[late.length - 1]! : 0) };
}

function round(ms: number): number {
  return Math.round(ms * 10) / 10;
}

/**
 * Added lateness a suite allows over its baseline while another engine node is SIGKILLed. A
 * survivor that stalls with its peer's death (blocked on the registry, its calls touched by the
 * sweep) shows 500 ms to seconds, or ends calls. Without that, the node-loss rig measured up to
 * +130 ms on a loaded 2-core machine, with the receiving process itself stalled up to 108 ms in the
 * same window (docs/operations.md, "Node loss"), hence the carrier-fuzz suite's margin (150 ms) for
 * the p99 and a wider one for the single worst frame.
 */
export const P99_MARGIN_MS = 150;
export const MAX_MARGIN_MS = 250;

/** Per-window stats over several calls: frames summed, the worst call's percentiles. */
export function mergeStats(all: WindowStats[]): WindowStats {
  return {
    frames: all.reduce((n, s) => n + s.frames, 0),
    p50Ms: Math.max(0, ...all.map((s) => s.p50Ms)),
    p99Ms: Math.max(0, ...all.map((s) => s.p99Ms)),
    maxMs: Math.max(0, ...all.map((s) => s.maxMs)),
  };
}

/**
 * The measuring process's own event-loop lag, sampled every 10 ms until `stop()`: a spike here in
 * a window is the receiver's (this process), not the engine's it measures.
 */
export function startLoopLag(): { samples: LatenessSample[]; stop(): void } {
  const samples: LatenessSample[] = [];
  let last = performance.now();
  const timer = setInterval(() => {
    const now = performance.now();
    samples.push({ atMs: now, lateMs: Math.max(0, now - last - 10) });
    last = now;
  }, 10);
  return { samples, stop: () => clearInterval(timer) };
}

export function fmtMs(ms: number): string {
  return ms.toFixed(1).padStart(6);
}

/**
 * Lateness of several calls' agent runs in named windows [from, to): each call's stats per
 * window, their merge, the receiver's own loop lag in the same windows, the single worst frame and
 * the receiver's worst stall over all the windows, and a printable table.
 */
export function latenessWindows(runs: ReadonlyArray<ReadonlyArray<readonly [number, number]>>, windows: Array<[name: string, fromMs: number, toMs: number]>, loopLag: LatenessSample[]) {
  const samples = runs.map((arrivals) => runLateness(arrivals));
  const rows = samples.map((s) => windows.map(([, from, to]) => windowStats(s, from, to)));
  const merged = windows.map((_, w) => mergeStats(rows.map((r) => r[w]!)));
  const lag = windows.map(([, from, to]) => windowStats(loopLag, from, to));
  const [fromMs, toMs] = [windows[0]![1], windows[windows.length - 1]![2]];
  const worst = (xs: LatenessSample[]) => xs.filter((x) => x.atMs >= fromMs && x.atMs < toMs).reduce<LatenessSample>((w, x) => (x.lateMs > w.lateMs ? x : w), { atMs: fromMs, lateMs: 0 });
  const table = [
    'window                                    frames   p50    p99    max | receiver loop lag p99    max',
    ...windows.map(
      ([name], w) =>
        `${name.padEnd(40)} ${String(merged[w]!.frames).padStart(7)} ${fmtMs(merged[w]!.p50Ms)} ${fmtMs(merged[w]!.p99Ms)} ${fmtMs(merged[w]!.maxMs)} |                 ${fmtMs(lag[w]!.p99Ms)} ${fmtMs(lag[w]!.maxMs)}`,
    ),
  ].join('\n');
  return { rows, merged, lag, worstFrame: worst(samples.flat()), worstLag: worst(loopLag), table };
}
