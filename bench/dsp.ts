/**
 * Per-frame cost of the media engine's own DSP (media-engine/audio): one row per pipeline step
 * a call runs every 20 ms. Decides whether a step stays on the actor's thread or goes to a worker
 *: anything that costs a few microseconds per frame stays inline.
 *
 *   npm run build:bench && node dist-bench/bench/dsp.js [--runs 7] [--frames 5000] [--warmup 2000]
 *
 * Each run times `frames` consecutive frames through one long-lived instance (as a call would),
 * after `warmup` frames to let V8 optimise; the table shows the median run, the spread, and how
 * many calls one core could carry for that step alone (20 ms / cost).
 *
 * Cost is CPU time of this process (process.cpuUsage), not wall time: on a shared or loaded
 * machine wall time also counts the time we were descheduled. Wall time is shown beside it, with
 * the load average, so a skewed run is visible.
 */
import { cpus, loadavg } from 'node:os';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { mulawDecode, mulawEncode } from '../media-engine/audio/g711.js';
import { JitterBuffer } from '../media-engine/audio/jitter-buffer.js';
import { Resampler } from '../media-engine/audio/resampler.js';
import { Vad } from '../media-engine/audio/vad.js';
import { encodeText, SimDecoder } from '../shared/providers/sim/codec.js';

export interface DspBenchOptions {
  /** Timed runs per case; the median is reported. Default 7. */
  runs?: number;
  /** Frames (20 ms each) per timed run. Default 5000 (100 s of audio). */
  framesPerRun?: number;
  /** Untimed frames before the first run. Default 2000. */
  warmupFrames?: number;
}

export interface Row {
  name: string;
  /** Median over runs, CPU nanoseconds per 20 ms frame. */
  nsPerFrame: number;
  minNsPerFrame: number;
  maxNsPerFrame: number;
  /** Median over runs, wall-clock nanoseconds per frame. */
  wallNsPerFrame: number;
  /** Frames per second of CPU time at the median. */
  opsPerSec: number;
  /** Concurrent calls one core could sustain for this step alone (20 ms / nsPerFrame). */
  callsPerCore: number;
  runs: number;
  framesPerRun: number;
}

const FRAME_MS = 20;

/** A second of speech-like test audio: a few harmonics with vibrato plus noise. */
function syntheticAudio(sampleRateHz: number): Int16Array {
  const out = new Int16Array(sampleRateHz);
  let seed = 7;
  for (let i = 0; i < out.length; i++) {
    seed = (seed * 1103515245 + 12345) >>> 0;
    const t = i / sampleRateHz;
    const f0Hz = 140 + 20 * Math.sin(2 * Math.PI * 3 * t);
    let v = 0;
    for (let h = 1; h <= 8; h++) v += Math.sin(2 * Math.PI * f0Hz * h * t) / h;
    out[i] = Math.round(v * 5000 + ((seed >>> 16) / 65536 - 0.5) * 600);
  }
  return out;
}

/** Cuts `audio` into 20 ms frames once, so the timed loop only indexes. */
function frames<T extends Int16Array | Uint8Array>(audio: T, sampleRateHz: number): T[] {
  const size = (sampleRateHz * FRAME_MS) / 1000;
  const out: T[] = [];
  for (let i = 0; i + size <= audio.length; i += size) out.push(audio.subarray(i, i + size) as T);
  return out;
}

interface Case {
  name: string;
  /** Processes frame number `i`; returns a number so the work cannot be optimised away. */
  step: (i: number) => number;
}

function buildCases(): Case[] {
  const pcm8k = syntheticAudio(8000);
  const mulaw8k = new Uint8Array(pcm8k.length);
  mulawEncode(pcm8k, mulaw8k);
  const mulawFrames = frames(mulaw8k, 8000);
  const pcm16kFrames = frames(syntheticAudio(16000), 16000);
  const pcm24kFrames = frames(syntheticAudio(24000), 24000);

  const decoded = new Int16Array(160);
  const up = new Resampler(8000, 16000);
  const down = new Resampler(16000, 8000);
  const encoded = new Uint8Array(160);
  const tts8k = new Resampler(24000, 8000);
  const tts16k = new Resampler(24000, 16000);
  const vad = new Vad({ sampleRateHz: 16000 });
  const vad8k = new Vad({ sampleRateHz: 8000 });
  const pcm8kFrames = frames(pcm8k, 8000);
  // Carrier inbound, before (decode, 8k->16k, VAD at 16 kHz) and now (decode, VAD at 8 kHz).
  const upIn = new Resampler(8000, 16000);
  const vadIn16 = new Vad({ sampleRateHz: 16000 });
  const vadIn8 = new Vad({ sampleRateHz: 8000 });
  const decodedIn = new Int16Array(160);
  // Digital silence right after speech: the VAD's high-pass state decays towards subnormals.
  const vadSilence = new Vad({ sampleRateHz: 16000 });
  const silence16k = new Int16Array(320);
  const vadSilence8k = new Vad({ sampleRateHz: 8000 });
  const silence8k = new Int16Array(160);
  const jb = new JitterBuffer({ frameMs: 20, minDepthMs: 20, maxDepthMs: 120, frameBytes: 160 });
  let seq = 0;
  // The sim ASR's decoder (the offline provider runs in the engine process): a caller speaking the
  // sim code (what sim callers and the engine bench send), and one speaking real speech (no code).
  const simCodeFrames = frames(encodeText('i would like to book a table for two tomorrow at seven', 8000), 8000);
  const simOnCode = new SimDecoder(8000);
  const simOnSpeech = new SimDecoder(8000);

  return [
    {
      name: 'mu-law decode + 8k->16k (caller in)',
      step: (i) => {
        mulawDecode(mulawFrames[i % mulawFrames.length]!, decoded);
        return up.process(decoded)[100]!;
      },
    },
    {
      name: '16k->8k + mu-law encode (agent out)',
      step: (i) => {
        const out = down.process(pcm16kFrames[i % pcm16kFrames.length]!);
        mulawEncode(out, encoded);
        return encoded[50]!;
      },
    },
    { name: 'TTS 24k->8k', step: (i) => tts8k.process(pcm24kFrames[i % pcm24kFrames.length]!)[80]! },
    { name: 'TTS 24k->16k', step: (i) => tts16k.process(pcm24kFrames[i % pcm24kFrames.length]!)[80]! },
    { name: 'VAD 16k frame', step: (i) => vad.process(pcm16kFrames[i % pcm16kFrames.length]!).energyDb },
    { name: 'VAD 8k frame', step: (i) => vad8k.process(pcm8kFrames[i % pcm8kFrames.length]!).energyDb },
    {
      name: 'VAD 16k, silence after speech',
      step: (i) => {
        // One second of speech, then 4 s of digital silence, repeated: 80 % of frames are silence.
        const k = i % 250;
        return vadSilence.process(k < 50 ? pcm16kFrames[k]! : silence16k).energyDb;
      },
    },
    {
      name: 'VAD 8k, digital silence (settled)',
      step: () => vadSilence8k.process(silence8k).energyDb,
    },
    {
      name: 'carrier in: decode + 8k->16k + VAD 16k (before)',
      step: (i) => {
        mulawDecode(mulawFrames[i % mulawFrames.length]!, decodedIn);
        return vadIn16.process(upIn.process(decodedIn)).energyDb;
      },
    },
    {
      name: 'carrier in: decode + VAD 8k (native rate)',
      step: (i) => {
        mulawDecode(mulawFrames[i % mulawFrames.length]!, decodedIn);
        return vadIn8.process(decodedIn).energyDb;
      },
    },
    {
      name: 'sim ASR decode 8k, sim-code caller',
      step: (i) => {
        simOnCode.push(simCodeFrames[i % simCodeFrames.length]!);
        return simOnCode.takeEvents().length;
      },
    },
    {
      name: 'sim ASR decode 8k, speech (no code)',
      step: (i) => {
        simOnSpeech.push(pcm8kFrames[i % pcm8kFrames.length]!);
        return simOnSpeech.takeEvents().length;
      },
    },
    {
      name: 'jitter buffer push + pop',
      step: (i) => {
        const nowMs = seq * FRAME_MS;
        jb.push(seq, nowMs, mulawFrames[i % mulawFrames.length]!, nowMs + 5);
        seq++;
        const p = jb.pop(nowMs + FRAME_MS);
        return p.kind === 'frame' ? p.payload[0]! : 0;
      },
    },
  ];
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

export async function runDspBench(opts: DspBenchOptions = {}): Promise<Row[]> {
  const runs = opts.runs ?? 7;
  const framesPerRun = opts.framesPerRun ?? 5000;
  const warmupFrames = opts.warmupFrames ?? 2000;
  const rows: Row[] = [];
  let sink = 0;
  for (const c of buildCases()) {
    let frame = 0;
    for (let i = 0; i < warmupFrames; i++) sink += c.step(frame++);
    const nsPerFrame: number[] = [];
    const wallNsPerFrame: number[] = [];
    for (let r = 0; r < runs; r++) {
      const wallStart = process.hrtime.bigint();
      const cpuStart = process.cpuUsage();
      for (let i = 0; i < framesPerRun; i++) sink += c.step(frame++);
      const cpu = process.cpuUsage(cpuStart);
      wallNsPerFrame.push(Number(process.hrtime.bigint() - wallStart) / framesPerRun);
      nsPerFrame.push(((cpu.user + cpu.system) * 1000) / framesPerRun);
      // Yield between runs so a caller (bench/run-all.ts) keeps its event loop responsive.
      await new Promise<void>((resolve) => setImmediate(resolve));
    }
    const med = median(nsPerFrame);
    rows.push({
      name: c.name,
      nsPerFrame: med,
      minNsPerFrame: Math.min(...nsPerFrame),
      maxNsPerFrame: Math.max(...nsPerFrame),
      wallNsPerFrame: median(wallNsPerFrame),
      opsPerSec: 1e9 / med,
      callsPerCore: (FRAME_MS * 1e6) / med,
      runs,
      framesPerRun,
    });
  }
  if (Number.isNaN(sink)) console.log('unreachable'); // keeps `sink` observable
  return rows;
}

export function formatDspTable(rows: Row[], opts: DspBenchOptions = {}): string {
  const settings = [
    `DSP per 20 ms frame (media-engine/audio)`,
    `node ${process.version}, ${cpus()[0]?.model ?? 'unknown cpu'} x${cpus().length}, load average ${loadavg()[0]!.toFixed(1)}`,
    `runs ${rows[0]?.runs ?? opts.runs}, frames/run ${rows[0]?.framesPerRun ?? opts.framesPerRun}, warmup ${opts.warmupFrames ?? 2000} frames; median run shown`,
    `resampler: Kaiser polyphase (media-engine/audio/resampler.ts defaults); jitter buffer 20/120 ms, 160 B frames`,
  ];
  const header = ['step', 'cpu ns/frame', 'min..max', 'wall ns/frame', 'ops/s', 'calls/core'];
  const body = rows.map((r) => [
    r.name,
    r.nsPerFrame.toFixed(0),
    `${r.minNsPerFrame.toFixed(0)}..${r.maxNsPerFrame.toFixed(0)}`,
    r.wallNsPerFrame.toFixed(0),
    Math.round(r.opsPerSec).toLocaleString('en-US'),
    Math.round(r.callsPerCore).toLocaleString('en-US'),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...body.map((b) => b[i]!.length)));
  const line = (cells: string[]): string => cells.map((c, i) => (i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!))).join('  ');
  return [...settings, '', line(header), widths.map((w) => '-'.repeat(w)).join('  '), ...body.map(line)].join('\n');
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({
    options: { runs: { type: 'string' }, frames: { type: 'string' }, warmup: { type: 'string' } },
  });
  const opts: DspBenchOptions = {
    runs: values.runs ? Number(values.runs) : undefined,
    framesPerRun: values.frames ? Number(values.frames) : undefined,
    warmupFrames: values.warmup ? Number(values.warmup) : undefined,
  };
  const rows = await runDspBench(opts);
  console.log(formatDspTable(rows, opts));
}
