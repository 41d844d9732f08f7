/**
 * What pre-warm saves. One engine node in this process (MemoryRegistry, real adapters, no
 * providerFactory: providers come from the session config through the registry, as in production)
 * against the vendor fakes on loopback: Deepgram (ASR), OpenAI (LLM), Cartesia (TTS). The two
 * WebSocket fakes delay their upgrade by `--delays` ms, modelling the TCP + TLS handshake to a
 * real vendor (a fake on loopback answers in well under a millisecond).
 *
 * Per delay, three modes, interleaved run by run:
 * - `cold`: the caller connects; the node opens the vendor sockets then;
 * - `prewarm`: the `prewarm` command (`registry.commands.sendCommand(nodeId, {kind:'prewarm', sessionId})`
 *   after `registry.putSession`) completes, then the caller connects;
 * - `prewarm-racing`: the command is sent and the caller connects at once, as happens when the
 *   control plane answers the session start without waiting for the prewarm (it does not wait):
 *   the caller connects `--client-gap` ms after the command, with the handshakes still in flight.
 *
 * Two calls per run and mode, every time measured from the moment the caller starts connecting
 * (on loopback its socket is open well under a millisecond later):
 * - welcome call (welcome "hi", caller silent): `pipeline_ready`, the first caller audio frame that
 *   reaches the ASR vendor (server side of the Deepgram fake), the first agent audio frame;
 * - speech call (no welcome; the caller says `--phrase` from the first frame): the `transcription`.
 * It also counts vendor connections per call (1 = the warm socket was adopted).
 *
 *   npm run build:bench && node dist-bench/bench/prewarm.js [--runs 8] [--delays 0,150] [--phrase "hello there"] [--client-gap 50]
 *
 * No hook in the engine: the "audio reaches the ASR vendor" time is taken by a Deepgram fake
 * subclass that stamps the first binary frame of each connection.
 */
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import type { WebSocket } from 'ws';
import { realClock } from '../shared/clock.js';
import { loadConfig } from '../shared/config.js';
import { createLogger } from '../shared/logger.js';
import { MemoryRegistry } from '../shared/registry/index.js';
import type { SessionConfig } from '../shared/voice/session-config.js';
import { startEngineNode, type EngineNode } from '../media-engine/node.js';
import { encodeText } from '../shared/providers/sim/codec.js';
import { CartesiaFake } from '../test/fakes/cartesia.js';
import { DeepgramFake } from '../test/fakes/deepgram.js';
import { OpenAiFake } from '../test/fakes/openai.js';
import type { WsRecord } from '../test/fakes/ws-fake.js';
import { sessionConfig } from '../test/helpers/session-config.js';
import { VoiceClient } from '../test/helpers/voice-client.js';

export interface PrewarmBenchOptions {
  /** Runs per mode and delay. Default 8. */
  runs: number;
  /** Vendor WebSocket handshake delays, ms. Default [0, 150]. */
  delaysMs: number[];
  /** What the caller says in the speech call. Default "hello there". */
  phrase: string;
  /**
   * `prewarm-racing`: time from the prewarm command to the caller's connect, modelling the session
   * start response reaching the client and the client opening its socket. Default 50.
   */
  clientGapMs: number;
}

export const PREWARM_DEFAULTS: PrewarmBenchOptions = { runs: 8, delaysMs: [0, 150], phrase: 'hello there', clientGapMs: 50 };

type Mode = 'cold' | 'prewarm' | 'prewarm-racing';
const MODES: Mode[] = ['cold', 'prewarm', 'prewarm-racing'];

interface Sample {
  pipelineReadyMs: number;
  asrAudioAtVendorMs: number;
  firstAgentAudioMs: number;
  transcriptionMs: number;
  /** Deepgram / Cartesia connections opened for the welcome call (1 each: the warm ones were adopted). */
  asrConnections: number;
  ttsConnections: number;
  prewarmCommandMs: number;
}

/** Deepgram fake that stamps when each connection's first audio frame arrived. */
class TimedDeepgramFake extends DeepgramFake {
  readonly firstAudioAt = new Map<WsRecord, number>();
  protected override onConnection(rec: WsRecord, ws: WebSocket): void {
    ws.on('message', (_data, isBinary) => {
      if (isBinary && !this.firstAudioAt.has(rec)) this.firstAudioAt.set(rec, performance.now());
    });
    super.onConnection(rec, ws);
  }
}

export async function runPrewarmBench(opts: Partial<PrewarmBenchOptions> = {}, log: (l: string) => void = console.error): Promise<string> {
  const o: PrewarmBenchOptions = { ...PREWARM_DEFAULTS, ...opts };
  const registry = new MemoryRegistry();
  const node = await startEngineNode({
    config: loadConfig({ OUTBOUND_ALLOW_CIDRS: '127.0.0.0/8' }, { enginePort: 0, host: '127.0.0.1', engineCapacity: 20, maxSockets: 50 }),
    logger: createLogger({ level: 'error' }),
    clock: realClock,
    registry,
    port: 0,
  });
  const rows: Array<{ delayMs: number; mode: Mode; samples: Sample[] }> = [];
  try {
    for (const delayMs of o.delaysMs) {
      const deepgram = new TimedDeepgramFake();
      const cartesia = new CartesiaFake();
      const openai = new OpenAiFake();
      await Promise.all([deepgram.start(), cartesia.start(), openai.start()]);
      if (delayMs > 0) {
        deepgram.faults.always({ slowFirstByteMs: delayMs });
        cartesia.faults.always({ slowFirstByteMs: delayMs });
      }
      const providers: SessionConfig['providers'] = {
        asr: { provider_name: 'deepgram', api_key: deepgram.apiKey, base_url: deepgram.url, model_name: 'nova-3' },
        llm: { provider_name: 'openai', api_key: openai.apiKey, base_url: `${openai.url}/v1`, model_name: 'gpt-bench' },
        tts: { provider_name: 'cartesia', api_key: cartesia.apiKey, base_url: cartesia.url, voice: 'bench-voice' },
      };
      const byMode = new Map<Mode, Sample[]>(MODES.map((m) => [m, []]));
      try {
        // One untimed call first: JIT, undici pool and module init would otherwise land on run 1.
        await oneRun(node, registry, providers, deepgram, cartesia, 'cold', o.phrase, o.clientGapMs);
        for (let run = 0; run < o.runs; run++) {
          for (const mode of MODES) {
            byMode.get(mode)!.push(await oneRun(node, registry, providers, deepgram, cartesia, mode, o.phrase, o.clientGapMs));
          }
          log(`prewarm: delay ${delayMs} ms, run ${run + 1}/${o.runs}`);
        }
      } finally {
        await Promise.all([deepgram.close(), cartesia.close(), openai.close()]);
      }
      for (const mode of MODES) rows.push({ delayMs, mode, samples: byMode.get(mode)! });
    }
  } finally {
    await node.close();
    await registry.close();
  }
  return render(o, rows);
}

async function oneRun(
  node: EngineNode,
  registry: MemoryRegistry,
  providers: SessionConfig['providers'],
  deepgram: TimedDeepgramFake,
  cartesia: CartesiaFake,
  mode: Mode,
  phrase: string,
  clientGapMs: number,
): Promise<Sample> {
  const dg0 = deepgram.connections.length;
  const ca0 = cartesia.connections.length;
  let prewarmCommandMs = 0;

  const open = async (cfg: SessionConfig): Promise<{ c: VoiceClient; t0: number; warming: Promise<unknown> }> => {
    await registry.sessions.putSession({ sessionId: cfg.session_id, agentId: cfg.agent_id, nodeId: node.nodeId, config: cfg, createdAtMs: Date.now(), connectDeadlineMs: Date.now() + 30_000 });
    let warming: Promise<unknown> = Promise.resolve();
    if (mode !== 'cold') {
      const t = performance.now();
      warming = registry.commands.sendCommand(node.nodeId, { kind: 'prewarm', sessionId: cfg.session_id }, 5000).then((r) => {
        prewarmCommandMs = performance.now() - t;
        if ((r as { status?: string }).status !== 'warm') throw new Error(`prewarm bench: prewarm answered ${JSON.stringify(r)}`);
      });
      if (mode === 'prewarm') await warming;
      else await sleep(clientGapMs);
    }
    // t0: the caller starts connecting (loopback: the socket is open well under a millisecond later).
    const t0 = performance.now();
    const c = await VoiceClient.connect(`ws://127.0.0.1:${node.port}/api/v1/voice/ws/${cfg.session_id}`);
    return { c, t0, warming };
  };

  // Welcome call: the caller stays silent.
  const w = await open(sessionConfig({ providers, welcome_message: 'hi', silence_timeout_ms: 60_000 }));
  const ready = await w.c.waitForType('pipeline_ready', 10_000);
  await until(() => w.c.audioFrames > 0, 10_000, 'the first agent audio frame');
  // The first Deepgram connection since the run began is the welcome call's (warm or cold).
  const dgRec = () => deepgram.connections[dg0];
  await until(() => dgRec() !== undefined && deepgram.firstAudioAt.has(dgRec()!), 10_000, 'caller audio at the ASR vendor');
  const sample = {
    pipelineReadyMs: ready.at - w.t0,
    firstAgentAudioMs: w.c.audioFrameTimes[0]! - w.t0,
    asrAudioAtVendorMs: deepgram.firstAudioAt.get(dgRec()!)! - w.t0,
  };
  const welcomeAsrConnections = deepgram.connections.length - dg0;
  const welcomeTtsConnections = cartesia.connections.length - ca0;
  await w.warming;
  w.c.close();
  await w.c.closed();

  // Speech call: the caller speaks from its first frame; no welcome.
  const s = await open(sessionConfig({ providers, silence_timeout_ms: 60_000 }));
  void s.c.say(phrase);
  const tr = await s.c.waitFor((e) => e.type === 'transcription', 15_000);
  if (tr.text !== phrase) throw new Error(`prewarm bench: transcribed "${String(tr.text)}", said "${phrase}"`);
  const transcriptionMs = tr.at - s.t0;
  await s.warming;
  s.c.close();
  await s.c.closed();

  return {
    ...sample,
    transcriptionMs,
    asrConnections: welcomeAsrConnections,
    ttsConnections: welcomeTtsConnections,
    prewarmCommandMs,
  };
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

async function until(pred: () => boolean, timeoutMs: number, what: string): Promise<void> {
  const end = performance.now() + timeoutMs;
  while (!pred()) {
    if (performance.now() > end) throw new Error(`prewarm bench: timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 2));
  }
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))]!;
}

function render(o: PrewarmBenchOptions, rows: Array<{ delayMs: number; mode: Mode; samples: Sample[] }>): string {
  const phraseMs = Math.round((encodeText(o.phrase, 16000).length / 16000) * 1000);
  const f = (xs: number[]) => `${pct(xs, 50).toFixed(0)} / ${pct(xs, 90).toFixed(0)}`;
  const lines = [
    `## Pre-warm (bench/prewarm.ts)`,
    '',
    `Settings: runs ${o.runs} per mode and delay (after one untimed call), vendor WebSocket handshake delay ${o.delaysMs.join(', ')} ms ` +
      `(Deepgram and Cartesia fakes; OpenAI LLM over HTTP, no warm-up), phrase "${o.phrase}" (${phraseMs} ms of audio), node ${process.version}, ` +
      `prewarm-racing connects ${o.clientGapMs} ms after sending the command, everything on 127.0.0.1 in one process. ` +
      `Times in ms from the caller starting to connect (the socket is open < 1 ms later), p50 / p90.`,
    '',
    '| handshake delay | mode | pipeline_ready | caller audio at ASR vendor | first agent audio (welcome) | transcription | vendor sockets of the welcome call (ASR, TTS) | prewarm command |',
    '|---|---|---|---|---|---|---|---|',
  ];
  for (const r of rows) {
    const s = r.samples;
    const conns = `${(s.reduce((a, x) => a + x.asrConnections, 0) / s.length).toFixed(2)}, ${(s.reduce((a, x) => a + x.ttsConnections, 0) / s.length).toFixed(2)}`;
    lines.push(
      `| ${r.delayMs} | ${r.mode} | ${f(s.map((x) => x.pipelineReadyMs))} | ${f(s.map((x) => x.asrAudioAtVendorMs))} | ${f(s.map((x) => x.firstAgentAudioMs))} | ` +
        `${f(s.map((x) => x.transcriptionMs))} | ${conns} | ${r.mode === 'cold' ? '-' : f(s.map((x) => x.prewarmCommandMs))} |`,
    );
  }
  lines.push(
    '',
    `Transcription can only come once the phrase has been spoken (${phraseMs} ms): while the ASR socket is still opening, the ` +
      `adapter buffers the caller's audio (up to 2 s) and sends it on connect, so a handshake shorter than the phrase costs the ` +
      `transcription nothing; it shows in when the audio reaches the vendor and in the welcome's first audio (Cartesia).`,
  );
  return lines.join('\n');
}

const isEntryPoint = process.argv[1] !== undefined && import.meta.url === pathToFileURL(process.argv[1]).href;
if (isEntryPoint) {
  const { values } = benchArgs({
    options: {
      runs: { type: 'string' },
      delays: { type: 'string' },
      phrase: { type: 'string' },
      'client-gap': { type: 'string' },
    },
  });
  const opts: Partial<PrewarmBenchOptions> = {};
  if (values.runs) opts.runs = Number(values.runs);
  if (values.delays) opts.delaysMs = values.delays.split(',').map(Number);
  if (values.phrase) opts.phrase = values.phrase;
  if (values['client-gap']) opts.clientGapMs = Number(values['client-gap']);
  runPrewarmBench(opts).then(
    (table) => {
      console.log(table);
      process.exit(0);
    },
    (err: unknown) => {
      console.error(err);
      process.exit(1);
    },
  );
}
