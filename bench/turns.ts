/**
 * Turn latency with the sim providers at zero latency: the engine's `internal_overhead_ms` per turn
 * (turn_complete timing: first frame sent minus the providers' own time), first audio, session start
 * to `pipeline_ready`, and barge-in reaction (confirming frame received -> `clear` sent, and -> last
 * agent frame sent), at 1 call, 100 calls and the largest real-time N. Same machinery as
 * bench/engine.ts (separate engine and load-generator processes); N=1 is the same-run baseline.
 *
 *   npm run build:bench && node dist-bench/bench/turns.js [--drivers twilio-lite,browser] [--calls 1,100,200]
 *     [--window 30] [--window-1 60] [--warmup 4] [--providers sim-net|sim] [--no-append]
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { appendResults, commandLine, renderSection, type Section } from './lib/report.js';
import { runEngineStep, type StepResult } from './engine/step.js';
import type { DriverKind } from './engine/drivers.js';
import type { ProviderMode } from './engine/providers.js';
import { turnsTable } from './engine/tables.js';

export interface TurnsBenchOptions {
  /** Default ['twilio-lite', 'browser']. */
  drivers: DriverKind[];
  /** Concurrent calls per row; the first row is the baseline. Default [1, 100, 200] (200: the largest real-time N measured for both caller kinds). */
  calls: number[];
  /** Measurement window for N > 1, seconds. Default 30. */
  windowSec: number;
  /** Measurement window for N = 1 (few turns per second), seconds. Default 60. */
  windowOneSec: number;
  /** Conversation warm-up, seconds. Default 4. */
  warmupSec: number;
  /** One turn in n is a barge-in. Default 3. */
  bargeEvery: number;
  jitterMs: number;
  providerMode: ProviderMode;
  seed: number;
}

export const TURNS_DEFAULTS: TurnsBenchOptions = {
  drivers: ['twilio-lite', 'browser'],
  calls: [1, 100, 200],
  windowSec: 30,
  windowOneSec: 60,
  warmupSec: 4,
  bargeEvery: 3,
  jitterMs: 20,
  providerMode: 'sim-net',
  seed: 7,
};

export async function runTurnsBench(opts: Partial<TurnsBenchOptions> = {}, log: (l: string) => void = console.error): Promise<{ sections: Section[]; rows: Map<DriverKind, StepResult[]> }> {
  const o: TurnsBenchOptions = { ...TURNS_DEFAULTS, ...opts };
  const rows = new Map<DriverKind, StepResult[]>();
  const sections: Section[] = [];
  for (const driver of o.drivers) {
    const steps: StepResult[] = [];
    for (const n of o.calls) {
      log(`turns: ${driver} N=${n}`);
      steps.push(
        await runEngineStep(
          {
            calls: n,
            driver,
            jitterMs: o.jitterMs,
            lossProb: 0,
            connectPerSec: 200,
            idleSec: 1,
            warmupSec: o.warmupSec,
            windowSec: n === 1 ? o.windowOneSec : o.windowSec,
            bargeEvery: o.bargeEvery,
            seed: o.seed,
            providers: { llmTtftMs: 0, llmTokensPerSecond: 0, ttsTtfbMs: 0, asrLatencyMs: 0, providerMode: o.providerMode, vadDenormalFix: false, cheapUpsample: false },
          },
          log,
        ),
      );
    }
    rows.set(driver, steps);
    sections.push(turnsSection(o, driver, steps));
  }
  return { sections, rows };
}

export function turnsSection(o: Pick<TurnsBenchOptions, 'windowSec' | 'windowOneSec' | 'bargeEvery' | 'providerMode' | 'jitterMs'>, driver: DriverKind, steps: StepResult[]): Section {
  const base = steps.find((s) => s.calls === 1);
  return {
    title: `Turn latency and barge-in: ${driver} (${o.providerMode} providers at zero latency)`,
    settings: {
      rows: steps.map((s) => `N=${s.calls}${s.realTime ? '' : ' (not real time)'}`).join(', '),
      window: `${o.windowOneSec} s at N=1, ${o.windowSec} s otherwise; 1 turn in ${o.bargeEvery} is a barge-in`,
      'overhead (ms)': 'turn_complete.timing.internal_overhead_ms: first frame sent minus (asr + llm ttfb + tools + tts ttfb), integer ms',
      'first audio (ms)': 'timing.total_ms: caller speech end (VAD) -> first agent frame sent; includes the sim ASR end-marker wait',
      'barge-in (ms)': 'from the inbound frame whose recognition confirmed the barge-in (handed to the actor) to clearAudio (Twilio `clear`), and to the last agent frame sent after it (0 = none); arrival = from that frame\'s arrival on the socket (carrier: + jitter buffer)',
      ready: 'ms at the client; browser: connect -> pipeline_ready received (claim on the in-process registry); carrier: connect -> start sent (carrier sockets carry no events)',
      baseline: 'N=1 of the same run ("x N=1 p99")',
      ...(driver !== 'browser' ? { link: `jitter 0..${o.jitterMs} ms` } : {}),
    },
    blocks: [turnsTable(steps, base)],
    notes: [],
  };
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({
    options: {
      drivers: { type: 'string' },
      calls: { type: 'string' },
      window: { type: 'string' },
      'window-1': { type: 'string' },
      warmup: { type: 'string' },
      providers: { type: 'string' },
      'no-append': { type: 'boolean' },
    },
  });
  const opts: Partial<TurnsBenchOptions> = {};
  if (values.drivers) opts.drivers = values.drivers.split(',') as DriverKind[];
  if (values.calls) opts.calls = values.calls.split(',').map(Number);
  if (values.window) opts.windowSec = Number(values.window);
  if (values['window-1']) opts.windowOneSec = Number(values['window-1']);
  if (values.warmup) opts.warmupSec = Number(values.warmup);
  if (values.providers) opts.providerMode = values.providers as ProviderMode;
  const r = await runTurnsBench(opts);
  for (const s of r.sections) console.log(renderSection(s) + '\n');
  if (!values['no-append']) appendResults('turn latency', r.sections, { command: commandLine() });
}
