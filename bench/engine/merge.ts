/**
 * Readings of several engine processes on one node (`--engines N`) combined into one, as if one
 * process had carried all the calls: CPU, memory and counters add up, histograms and samples pool,
 * event-loop delay is the worst process's (a frame is late on whichever loop it waited on).
 */
import type { WindowStats } from '../lib/proc-stats.js';
import { Histogram } from '../lib/stats.js';
import type { ProbeSnapshot } from './probe.js';

export function mergeWindowStats(all: WindowStats[]): WindowStats {
  const sum = (k: keyof WindowStats) => all.reduce((n, s) => n + s[k], 0);
  const max = (k: keyof WindowStats) => Math.max(...all.map((s) => s[k]));
  return {
    wallMs: max('wallMs'),
    cpuPct: sum('cpuPct'),
    cpuMs: sum('cpuMs'),
    mainCpuPct: sum('mainCpuPct'),
    eldP50Ms: max('eldP50Ms'),
    eldP99Ms: max('eldP99Ms'),
    eldMaxMs: max('eldMaxMs'),
    rssBytes: sum('rssBytes'),
    heapUsedBytes: sum('heapUsedBytes'),
    externalBytes: sum('externalBytes'),
    arrayBuffersBytes: sum('arrayBuffersBytes'),
  };
}

export function mergeMemory(all: NodeJS.MemoryUsage[]): NodeJS.MemoryUsage {
  const sum = (k: keyof NodeJS.MemoryUsage) => all.reduce((n, m) => n + m[k], 0);
  return { rss: sum('rss'), heapTotal: sum('heapTotal'), heapUsed: sum('heapUsed'), external: sum('external'), arrayBuffers: sum('arrayBuffers') };
}

export function mergeProbes(all: ProbeSnapshot[]): ProbeSnapshot {
  const hist = (k: 'lateSlot' | 'lateSched' | 'tickLate') => {
    const h = Histogram.fromJSON(all[0]![k]);
    for (const p of all.slice(1)) h.merge(p[k]);
    return h.toJSON();
  };
  const sum = (k: 'framesSent' | 'underruns' | 'droppedFrames' | 'droppedPlayoutFrames' | 'framesAfterClear' | 'turns' | 'interruptedTurns' | 'callsAttached') =>
    all.reduce((n, p) => n + p[k], 0);
  const cat = (k: 'bargeToClearMs' | 'bargeArrivalToClearMs' | 'bargeToLastFrameMs' | 'turnOverheadMs' | 'turnTotalMs') => all.flatMap((p) => p[k]);
  const inbound = all.every((p) => !p.inbound)
    ? undefined
    : all.reduce(
        (n, p) => ({ received: n.received + (p.inbound?.received ?? 0), concealed: n.concealed + (p.inbound?.concealed ?? 0), late: n.late + (p.inbound?.late ?? 0), trimmed: n.trimmed + (p.inbound?.trimmed ?? 0) }),
        { received: 0, concealed: 0, late: 0, trimmed: 0 },
      );
  return {
    lateSlot: hist('lateSlot'),
    lateSched: hist('lateSched'),
    tickLate: hist('tickLate'),
    framesSent: sum('framesSent'),
    underruns: sum('underruns'),
    droppedFrames: sum('droppedFrames'),
    droppedPlayoutFrames: sum('droppedPlayoutFrames'),
    framesAfterClear: sum('framesAfterClear'),
    bargeToClearMs: cat('bargeToClearMs'),
    bargeArrivalToClearMs: cat('bargeArrivalToClearMs'),
    bargeToLastFrameMs: cat('bargeToLastFrameMs'),
    turnOverheadMs: cat('turnOverheadMs'),
    turnTotalMs: cat('turnTotalMs'),
    turns: sum('turns'),
    interruptedTurns: sum('interruptedTurns'),
    callsAttached: sum('callsAttached'),
    inbound,
  };
}
