/** Tables for the engine benches (capacity ramp and turn latency), from StepResults. */
import { num, table } from '../lib/report.js';
import type { StepResult } from './step.js';

const drops = (s: StepResult): number => s.droppedFrames + s.droppedPlayoutFrames;

/** One row per step; `bare` (same N, same run) gives the "x bare" ratio columns when present. */
export function capacityTable(steps: StepResult[], bareByN: Map<number, StepResult>): string {
  return table(
    ['calls', 'load', 'ok', 'eng cpu %', 'cpu %/call', 'main %/call', 'x bare', 'rss KiB/call idle', 'heap+ext KiB/call idle', 'rss KiB/call active', 'late p50', 'late p99', 'late max', 'x bare p99', 'sched p99', 'underruns', 'drops', 'eld p50', 'eld p99', 'eld max', 'gen cpu %', 'gen late p99', 'real time'],
    steps.map((s) => {
      const b = bareByN.get(s.calls);
      return [
        s.calls,
        num(s.loadAvg1, 1),
        s.connected,
        num(s.active.engine.cpuPct),
        num(s.active.cpuPctPerCall, 3),
        num(s.active.engine.mainCpuPct / Math.max(1, s.connected), 3),
        b ? num(s.active.engine.cpuPct / b.active.engine.cpuPct, 1) : '-',
        num(s.idle.rssPerCallKiB),
        num(s.idle.heapPerCallKiB + s.idle.externalPerCallKiB),
        num(s.active.rssPerCallKiB),
        num(s.lateSlot.p50, 2),
        num(s.lateSlot.p99, 2),
        num(s.lateSlot.max, 1),
        b ? num(s.lateSlot.p99 / b.lateSlot.p99, 1) : '-',
        num(s.lateSched.p99, 2),
        s.underruns,
        drops(s),
        num(s.active.engine.eldP50Ms, 1),
        num(s.active.engine.eldP99Ms, 1),
        num(s.active.engine.eldMaxMs, 1),
        num(s.client.stats.cpuPct),
        num(s.client.sendLate.p99, 1),
        s.realTime ? 'yes' : 'NO',
      ];
    }),
  );
}

/** The bare uWS baseline rows (bare.ts) measured in the same run. */
export function bareTable(bare: StepResult[]): string {
  return table(
    ['calls', 'load', 'srv cpu %', 'cpu %/call', 'rss KiB/call idle', 'late p50', 'late p99', 'late max', 'eld p99', 'gen cpu %', 'gen late p99'],
    bare.map((s) => [
      s.calls,
      num(s.loadAvg1, 1),
      num(s.active.engine.cpuPct),
      num(s.active.cpuPctPerCall, 3),
      num(s.idle.rssPerCallKiB),
      num(s.lateSlot.p50, 2),
      num(s.lateSlot.p99, 2),
      num(s.lateSlot.max, 1),
      num(s.active.engine.eldP99Ms, 1),
      num(s.client.stats.cpuPct),
      num(s.client.sendLate.p99, 1),
    ]),
  );
}

/** Turn latency, barge-in and session start per step (engine-side timings, ms). */
export function turnsTable(steps: StepResult[], base?: StepResult): string {
  return table(
    ['calls', 'turns', 'interrupted', 'overhead p50', 'overhead p99', 'x N=1 p99', 'first audio p50', 'first audio p99', 'barge->clear p50', 'barge->clear p99', 'arrival->clear p50', 'arrival->clear p99', 'barge->last frame max', 'frames after clear', 'ready p50', 'ready p99', 'no answer', 'inbound concealed'],
    steps.map((s) => [
      s.calls,
      s.engineTurns,
      s.interruptedTurns,
      num(s.turnOverhead.p50, 0),
      num(s.turnOverhead.p99, 0),
      base && base.turnOverhead.p99 > 0 ? num(s.turnOverhead.p99 / base.turnOverhead.p99, 1) : '-',
      num(s.turnTotal.p50, 0),
      num(s.turnTotal.p99, 0),
      num(s.bargeToClear.p50, 2),
      num(s.bargeToClear.p99, 2),
      num(s.bargeArrivalToClear.p50, 1),
      num(s.bargeArrivalToClear.p99, 1),
      num(s.bargeToLastFrame.max, 2),
      s.framesAfterClear,
      num(s.pipelineReady.p50, 1),
      num(s.pipelineReady.p99, 1),
      s.client.noAnswer,
      s.inbound ? `${s.inbound.concealed}/${s.inbound.received}` : '-',
    ]),
  );
}
