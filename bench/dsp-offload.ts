/**
 * What bench/dsp.ts does not cover: Opus encode per frame, inline vs piscina (one frame and
 * batches), and the per-frame costs the engine capacity profile points at (VAD on silence with its
 * denormal tail, the sim ASR decoder, browser frame re-framing). Decides what stays on the actor's
 * thread.
 *
 *   npm run build:bench && node dist-bench/bench/dsp-offload.js [--frames 3000] [--jobs 200] [--threads 1] [--no-append]
 *
 * Run alone it also runs bench/dsp.ts's table first (runDspBench) and records both.
 *
 * Inline rows: CPU time per frame (process.cpuUsage, single thread). Piscina rows: jobs are run one
 * at a time (latency) and then `2 x threads` at a time (throughput); "main ns/frame" is the main
 * thread's busy time per frame (event-loop utilisation), the cost the actor's thread would still
 * pay; "wall us/job" the round trip. The same work inline is the baseline of each piscina row.
 */
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { Piscina } from 'piscina';
import { mulawDecode, mulawEncode } from '../media-engine/audio/g711.js';
import { Resampler } from '../media-engine/audio/resampler.js';
import { Vad } from '../media-engine/audio/vad.js';
import { SimulatedClock } from '../shared/clock.js';
import { BrowserTransport } from '../media-engine/transports/browser.js';
import { encodeText, SimDecoder } from '../shared/providers/sim/codec.js';
import { encodePackedBatch, packPcmBatch, speechEncoder } from '../media-engine/workers/ogg-opus.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';
import { median } from './lib/stats.js';
import type { DspJob } from './workers/dsp-worker.js';
import { formatDspTable, runDspBench, type DspBenchOptions, type Row as DspRow } from './dsp.js';

/** bench/dsp.ts (another engineer's micro-benchmark, reused as is) as a RESULTS.md section. */
export async function runDspBaseSection(opts: DspBenchOptions = {}): Promise<{ section: Section; rows: DspRow[] }> {
  const rows = await runDspBench(opts);
  return {
    section: { title: 'DSP per 20 ms frame (bench/dsp.ts)', settings: { source: 'runDspBench from bench/dsp.ts; its own settings lines follow' }, blocks: [formatDspTable(rows, opts)] },
    rows,
  };
}

export interface OffloadBenchOptions {
  /** Frames per inline timing run (median of 5 runs). Default 3000. */
  frames: number;
  /** piscina jobs per batch size. Default 200. */
  jobs: number;
  /** piscina threads. Default 1 (a 2-core machine keeps one core for the event loop). */
  threads: number;
}

export const OFFLOAD_DEFAULTS: OffloadBenchOptions = { frames: 3000, jobs: 200, threads: 1 };

function speechLike(rateHz: number, seconds: number): Int16Array {
  const out = new Int16Array(rateHz * seconds);
  let seed = 11;
  for (let i = 0; i < out.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const t = i / rateHz;
    const f0 = 130 + 25 * Math.sin(2 * Math.PI * 2.5 * t);
    let v = 0;
    for (let h = 1; h <= 6; h++) v += Math.sin(2 * Math.PI * f0 * h * t) / h;
    out[i] = Math.round(v * 6000 + ((seed >>> 16) / 65536 - 0.5) * 500);
  }
  return out;
}

/** CPU ns per call of `fn`, median of 5 runs of `n` calls after a warm-up. */
function cpuNs(fn: (i: number) => void, n: number): number {
  for (let i = 0; i < Math.min(n, 1000); i++) fn(i);
  const runs: number[] = [];
  for (let r = 0; r < 5; r++) {
    const t = process.cpuUsage();
    for (let i = 0; i < n; i++) fn(i);
    const c = process.cpuUsage(t);
    runs.push(((c.user + c.system) * 1000) / n);
  }
  return median(runs);
}

export interface InlineRow {
  name: string;
  nsPerFrame: number;
  note: string;
}

function inlineRows(frames: number): InlineRow[] {
  const rows: InlineRow[] = [];
  const pcm16 = speechLike(16000, 2);
  const frame16 = (i: number) => pcm16.subarray((i % 99) * 320, (i % 99) * 320 + 320);
  const enc16 = speechEncoder(16000);
  const buf16 = Buffer.alloc(640);
  rows.push({
    name: 'Opus encode 20 ms @16 kHz (24 kb/s, the recording encoder)',
    nsPerFrame: cpuNs((i) => {
      buf16.set(new Uint8Array(frame16(i).buffer, frame16(i).byteOffset, 640));
      enc16.encode(buf16);
    }, Math.min(frames, 2000)),
    note: 'libopus via @discordjs/opus, complexity 5, signal voice',
  });
  const enc8 = speechEncoder(8000);
  const pcm8 = speechLike(8000, 2);
  const buf8 = Buffer.alloc(320);
  rows.push({
    name: 'Opus encode 20 ms @8 kHz',
    nsPerFrame: cpuNs((i) => {
      buf8.set(new Uint8Array(pcm8.buffer, (i % 99) * 320, 320));
      enc8.encode(buf8);
    }, Math.min(frames, 2000)),
    note: '',
  });
  // VAD on digital silence right after speech: the high-pass state decays into subnormals.
  const speech = encodeText('hello there how are you', 16000);
  const silence = new Int16Array(320);
  const excite = (v: Vad) => {
    for (let i = 0; i + 320 <= speech.length; i += 320) v.process(speech.subarray(i, i + 320));
  };
  const vadAsIs = new Vad({ sampleRateHz: 16000 });
  excite(vadAsIs);
  const asIsNs = cpuNs(() => vadAsIs.process(silence), frames);
  const y = vadAsIs as unknown as { y1: number };
  const stuck = y.y1 !== 0 && Math.abs(y.y1) < 1e-300;
  rows.push({ name: 'VAD 16k, silence after speech (as shipped)', nsPerFrame: asIsNs, note: stuck ? 'biquad state stuck at subnormal values' : 'state flushed to 0 (denormal fix in the engine)' });
  const vadFixed = new Vad({ sampleRateHz: 16000 });
  const state = vadFixed as unknown as { y1: number; y2: number };
  excite(vadFixed);
  rows.push({
    name: 'VAD 16k, silence after speech, state flushed < 1e-20',
    nsPerFrame: cpuNs(() => {
      vadFixed.process(silence);
      if (Math.abs(state.y1) < 1e-20) state.y1 = 0;
      if (Math.abs(state.y2) < 1e-20) state.y2 = 0;
    }, frames),
    note: 'the proposed fix, applied from outside',
  });
  const vadSpeech = new Vad({ sampleRateHz: 16000 });
  rows.push({ name: 'VAD 16k, speech-like audio', nsPerFrame: cpuNs((i) => vadSpeech.process(frame16(i)), frames), note: '' });
  const dec16 = new SimDecoder(16000);
  rows.push({ name: 'sim ASR decoder, 16 kHz frame', nsPerFrame: cpuNs(() => (dec16.push(silence), dec16.takeEvents()), frames), note: 'bench artefact: a vendor ASR costs a socket write' });
  const dec8 = new SimDecoder(8000);
  const s8 = new Int16Array(160);
  rows.push({ name: 'sim ASR decoder, 8 kHz frame', nsPerFrame: cpuNs(() => (dec8.push(s8), dec8.takeEvents()), frames), note: 'same' });
  // Simulated time moving 20 ms per message keeps the inbound budget (real time + 3 s) from
  // dropping messages after the warm-up, which would measure the drop path instead.
  const browserClock = new SimulatedClock();
  const transport = new BrowserTransport({ send: () => 1, getBufferedAmount: () => 0, end() {} }, browserClock);
  const msg = new ArrayBuffer(640);
  const reframe = () => {
    browserClock.advance(20);
    transport.receive(msg, () => {});
  };
  rows.push({ name: 'browser re-framing of a 640 B message', nsPerFrame: cpuNs(reframe, frames), note: 'BrowserTransport.receive: one TypedArray.set per 20 ms message' });
  if (transport.droppedInMessages > 0) throw new Error(`dsp-offload: ${transport.droppedInMessages} browser messages dropped (budget), the row would measure the drop path`);
  return rows;
}

export interface OffloadRow {
  name: string;
  framesPerJob: number;
  inlineNsPerFrame: number;
  seqWallUsPerJob: number;
  seqMainNsPerFrame: number;
  parMainNsPerFrame: number;
  parFramesPerSec: number;
}

async function offloadRows(o: OffloadBenchOptions): Promise<OffloadRow[]> {
  const pool = new Piscina({
    filename: path.resolve(import.meta.dirname, 'workers/dsp-worker.js'),
    minThreads: o.threads,
    maxThreads: o.threads,
    maxQueue: 4 * o.threads,
    idleTimeout: 60_000,
  });
  const rows: OffloadRow[] = [];
  const pcm8 = speechLike(8000, 12);
  const mulaw = new Uint8Array(pcm8.length);
  mulawEncode(pcm8, mulaw);
  const pcm24 = speechLike(24000, 12);
  const pcm16 = speechLike(16000, 12);
  type Make = (frames: number, i: number) => DspJob;
  const cases: Array<{ name: string; sizes: number[]; make: Make; inline: (job: DspJob) => void }> = [
    {
      name: 'mu-law decode + 8k->16k',
      sizes: [1, 10, 50, 250],
      make: (n, i) => ({ op: 'mulaw-up', data: mulaw.slice((i % 5) * 160, (i % 5) * 160 + n * 160).buffer }),
      inline: (job) => {
        const b = new Uint8Array(job.data);
        const p = new Int16Array(b.length);
        mulawDecode(b, p);
        new Resampler(8000, 16000).process(p);
      },
    },
    {
      name: 'TTS chunk 24k->8k',
      sizes: [1, 10, 50, 250],
      make: (n, i) => ({ op: 'tts-24k-8k', data: pcm24.slice((i % 5) * 480, (i % 5) * 480 + n * 480).buffer }),
      inline: (job) => void new Resampler(24000, 8000).process(new Int16Array(job.data)),
    },
    {
      name: 'turn -> Ogg/Opus @16k',
      sizes: [50, 250, 500],
      make: (n) => ({ op: 'ogg-opus', data: packPcmBatch([{ samples: pcm16.subarray(0, n * 320), sampleRateHz: 16000 }]) }),
      inline: (job) => void encodePackedBatch(job.data),
    },
  ];
  for (const c of cases) {
    for (const frames of c.sizes) {
      const jobs = Math.max(10, Math.min(o.jobs, Math.round((o.jobs * 50) / frames)));
      // Inline baseline: same job construction, same work, on this thread.
      for (let i = 0; i < 5; i++) c.inline(c.make(frames, i));
      const t0 = process.cpuUsage();
      for (let i = 0; i < jobs; i++) c.inline(c.make(frames, i));
      const tc = process.cpuUsage(t0);
      const inlineNsPerFrame = ((tc.user + tc.system) * 1000) / (jobs * frames);
      // Sequential round trips.
      for (let i = 0; i < 5; i++) await pool.run(c.make(frames, i));
      const elu0 = performance.eventLoopUtilization();
      const w0 = performance.now();
      for (let i = 0; i < jobs; i++) {
        const job = c.make(frames, i);
        await pool.run(job, { transferList: [job.data] });
      }
      const seqWallMs = performance.now() - w0;
      const elu1 = performance.eventLoopUtilization(elu0);
      // Pipelined: 2 x threads in flight.
      const elu2 = performance.eventLoopUtilization();
      const w2 = performance.now();
      let next = 0;
      const inFlight = 2 * o.threads;
      await Promise.all(
        Array.from({ length: inFlight }, async () => {
          while (next < jobs) {
            const i = next++;
            const job = c.make(frames, i);
            await pool.run(job, { transferList: [job.data] });
          }
        }),
      );
      const parWallMs = performance.now() - w2;
      const elu3 = performance.eventLoopUtilization(elu2);
      rows.push({
        name: c.name,
        framesPerJob: frames,
        inlineNsPerFrame,
        seqWallUsPerJob: (seqWallMs * 1000) / jobs,
        seqMainNsPerFrame: (elu1.active * 1e6) / (jobs * frames),
        parMainNsPerFrame: (elu3.active * 1e6) / (jobs * frames),
        parFramesPerSec: (jobs * frames) / (parWallMs / 1000),
      });
    }
  }
  await pool.destroy();
  return rows;
}

export interface OffloadResult {
  section: Section;
  inline: InlineRow[];
  offload: OffloadRow[];
}

export async function runOffloadBench(opts: Partial<OffloadBenchOptions> = {}): Promise<OffloadResult> {
  const o = { ...OFFLOAD_DEFAULTS, ...opts };
  const inline = inlineRows(o.frames);
  const off = await offloadRows(o);
  const section: Section = {
    title: 'DSP: Opus, inline vs piscina, and per-frame costs behind the engine profile',
    settings: {
      inline: `CPU ns per 20 ms frame, median of 5 runs of ${o.frames} frames (Opus: 2000)`,
      piscina: `${o.threads} thread(s), jobs run 1 at a time then ${2 * o.threads} in flight; fresh resampler/encoder per job; buffers moved (Piscina.move)`,
      'main ns/frame': "main thread's busy time per frame (event-loop utilisation) while offloading: what the actor's thread still pays",
      baseline: 'the same job run inline, same run ("x inline" = main-thread cost offloaded / inline cost)',
      cores: os.cpus().length,
    },
    blocks: [
      table(
        ['step', 'note', 'cpu ns/frame', 'calls/core'],
        inline.map((r) => [r.name, r.note, num(r.nsPerFrame), num(20e6 / r.nsPerFrame)]),
        2,
      ),
      table(
        ['job', 'frames/job', 'inline ns/frame', 'piscina wall us/job', 'main ns/frame (1 in flight)', 'x inline', 'main ns/frame (pipelined)', 'x inline', 'pipelined frames/s'],
        off.map((r) => [
          r.name,
          r.framesPerJob,
          num(r.inlineNsPerFrame),
          num(r.seqWallUsPerJob, 1),
          num(r.seqMainNsPerFrame),
          num(r.seqMainNsPerFrame / r.inlineNsPerFrame, 2),
          num(r.parMainNsPerFrame),
          num(r.parMainNsPerFrame / r.inlineNsPerFrame, 2),
          num(r.parFramesPerSec),
        ]),
      ),
    ],
  };
  return { section, inline, offload: off };
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({ options: { frames: { type: 'string' }, jobs: { type: 'string' }, threads: { type: 'string' }, 'no-append': { type: 'boolean' } } });
  const base = await runDspBaseSection();
  console.log(renderSection(base.section) + '\n');
  const { section: s } = await runOffloadBench({
    ...(values.frames ? { frames: Number(values.frames) } : {}),
    ...(values.jobs ? { jobs: Number(values.jobs) } : {}),
    ...(values.threads ? { threads: Number(values.threads) } : {}),
  });
  console.log(renderSection(s));
  if (!values['no-append']) appendResults('DSP', [base.section, s], { command: commandLine() });
}
