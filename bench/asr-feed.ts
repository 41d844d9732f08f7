/**
 * What feeding a vendor ASR costs the engine's event loop: N Deepgram streams (the production
 * ASR adapter, shared/providers/asr/deepgram-stream.ts) in this process, each pushed one 20 ms
 * frame every 20 ms as a call does, against the wire-faithful Deepgram fake in a child process.
 * One row per `sendChunkMs` (frames joined per WebSocket message). The `sim` providers of the
 * engine bench have no socket, so this cost is not in its figures.
 *
 *   npm run build:bench && node dist-bench/bench/asr-feed.js [--streams 200] [--seconds 5] [--chunks 20,40,60,100] [--no-append]
 *
 * CPU of this process (process.cpuUsage) over the window, minus a run of the same 20 ms loop
 * pushing to no stream (the pacing itself), per frame and per stream. Rows are interleaved over
 * two rounds; the mean is shown. The fake's byte count checks every pushed byte arrived.
 */
import { benchArgs } from './lib/args.js';
import { createDeepgramAsr } from '../shared/providers/asr/deepgram.js';
import type { AsrStream } from '../shared/providers/types.js';
import { forkChild } from './lib/child.js';
import { appendResults, commandLine, num, renderSection, table, type Section } from './lib/report.js';

const FRAME_MS = 20;

interface Options {
  streams: number;
  seconds: number;
  chunks: number[];
  rounds: number;
}

interface Row {
  chunkMs: number;
  cpuPct: number;
  usPerFrame: number;
  pctPerStream: number;
  messagesPerSec: number;
  bytesOk: boolean;
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Pushes one mu-law frame per stream every 20 ms for `seconds`; returns this process's CPU in us. */
async function feed(streams: AsrStream[], seconds: number): Promise<{ cpuUs: number; frames: number }> {
  const frame = new Uint8Array(160).fill(0xff);
  const ticks = Math.round((seconds * 1000) / FRAME_MS);
  let frames = 0;
  const t0 = process.cpuUsage();
  const start = performance.now();
  await new Promise<void>((done) => {
    let n = 0;
    const h = setInterval(() => {
      // Catch up on a late timer as a call's transport does (one frame per 20 ms of wall time).
      const due = Math.min(ticks, Math.floor((performance.now() - start) / FRAME_MS));
      for (; n < due; n++) {
        for (let i = 0; i < streams.length; i++) streams[i]!.push(frame);
        frames += streams.length;
      }
      if (n >= ticks) {
        clearInterval(h);
        done();
      }
    }, FRAME_MS);
  });
  const u = process.cpuUsage(t0);
  return { cpuUs: u.user + u.system, frames };
}

export async function runAsrFeedBench(o: Options, log: (l: string) => void = () => {}): Promise<{ rows: Row[]; section: Section }> {
  const child = await forkChild('asr/deepgram-host.js');
  try {
    const { url, apiKey } = await child.call<{ url: string; apiKey: string }>('info');
    const counts = () => child.call<{ accepted: number; messages: number; bytes: number }>('counts');
    const sums = new Map<number, { cpuUs: number; frames: number; messages: number; bytesOk: boolean; runs: number }>();
    let baseUs = 0;
    let baseRuns = 0;
    for (let round = 0; round < o.rounds; round++) {
      // The pacing loop alone: what every row pays without any stream.
      const base = await feed([], o.seconds);
      baseUs += base.cpuUs;
      baseRuns++;
      for (const chunkMs of o.chunks) {
        log(`asr-feed: round ${round + 1}, sendChunkMs ${chunkMs}, ${o.streams} streams`);
        const asr = createDeepgramAsr({ apiKey, baseUrl: url, sendChunkMs: chunkMs, keepAliveMs: 60_000 });
        const before = await counts();
        const streams = Array.from({ length: o.streams }, () => asr.stream({ sampleRateHz: 8000, encoding: 'mulaw' }));
        const deadline = performance.now() + 10_000;
        // Accepted counts every handshake so far: the previous row's sockets may still be closing.
        while ((await counts()).accepted - before.accepted < o.streams) {
          if (performance.now() > deadline) throw new Error('asr-feed: streams did not open within 10 s');
          await sleep(50);
        }
        const r = await feed(streams, o.seconds);
        for (const s of streams) s.end();
        // Until every pushed byte reached the fake (or a bound: the row then says NO).
        const want = before.bytes + r.frames * 160;
        const settleBy = performance.now() + 5000;
        let after = await counts();
        while (after.bytes < want && performance.now() < settleBy) {
          await sleep(50);
          after = await counts();
        }
        const s = sums.get(chunkMs) ?? { cpuUs: 0, frames: 0, messages: 0, bytesOk: true, runs: 0 };
        s.cpuUs += r.cpuUs;
        s.frames += r.frames;
        s.messages += after.messages - before.messages;
        s.bytesOk &&= after.bytes - before.bytes === r.frames * 160;
        s.runs++;
        sums.set(chunkMs, s);
        for (const st of streams) st.close();
        asr.close?.();
      }
    }
    const baseCpuUs = baseUs / baseRuns;
    const windowUs = o.seconds * 1e6;
    const rows: Row[] = o.chunks.map((chunkMs) => {
      const s = sums.get(chunkMs)!;
      const netUs = s.cpuUs / s.runs - baseCpuUs;
      const frames = s.frames / s.runs;
      return {
        chunkMs,
        cpuPct: (netUs / windowUs) * 100,
        usPerFrame: netUs / frames,
        pctPerStream: (netUs / windowUs) * 100 / o.streams,
        messagesPerSec: s.messages / s.runs / o.seconds,
        bytesOk: s.bytesOk,
      };
    });
    const first = rows[0]!;
    const section: Section = {
      title: 'ASR feed: the event loop cost of streaming caller audio to a vendor ASR (Deepgram adapter vs its wire-faithful fake)',
      settings: {
        streams: `${o.streams} Deepgram streams, 8 kHz mu-law (a carrier call's format), one 160-byte frame per stream every 20 ms`,
        window: `${o.seconds} s per row, ${o.rounds} rounds interleaved (mean)`,
        cpu: 'this process (all threads) minus the same 20 ms loop feeding no stream; the fake runs in a child process',
        'added latency': 'sendChunkMs - 20 ms at most before the vendor hears the newest frame (flush and end send at once)',
      },
      blocks: [
        table(
          ['sendChunkMs', 'messages/s', 'cpu % of a core', 'us per frame', '% of a core per stream', 'vs 20 ms', 'bytes all arrived'],
          rows.map((r) => [r.chunkMs, num(r.messagesPerSec), r.cpuPct.toFixed(1), r.usPerFrame.toFixed(2), r.pctPerStream.toFixed(3), `${((r.usPerFrame / first.usPerFrame) * 100).toFixed(0)} %`, r.bytesOk ? 'yes' : 'NO']),
        ),
      ],
      notes: [`pacing loop alone: ${((baseCpuUs / windowUs) * 100).toFixed(1)} % of a core (subtracted)`],
    };
    return { rows, section };
  } finally {
    await child.stop();
  }
}

const isEntryPoint = process.argv[1]?.endsWith('asr-feed.js');
if (isEntryPoint) {
  const { values } = benchArgs({
    options: { streams: { type: 'string' }, seconds: { type: 'string' }, chunks: { type: 'string' }, rounds: { type: 'string' }, 'no-append': { type: 'boolean' } },
  });
  const o: Options = {
    streams: Number(values.streams ?? 200),
    seconds: Number(values.seconds ?? 5),
    chunks: (values.chunks ?? '20,40,60,100').split(',').map(Number),
    rounds: Number(values.rounds ?? 2),
  };
  const { section } = await runAsrFeedBench(o, (l) => console.error(l));
  console.log(renderSection(section));
  if (!values['no-append']) appendResults('asr-feed', [section], { command: commandLine() });
}
