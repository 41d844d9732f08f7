/**
 * A CallActor on a simulated clock with the `sim` providers, an in-memory transport and an
 * in-memory recorder, for unit tests of turn logic. Time moves only when the test says so; the
 * runner's async work (sim LLM and TTS with zero latency) completes within a few event-loop turns.
 * Caller speech is real audio: the sim code (`encodeText`) that the VAD hears and the sim ASR reads.
 */
import type { ServerEvent } from '../../../shared/protocol/voice-socket.js';
import { SimulatedClock } from '../../../shared/clock.js';
import type { SessionConfig } from '../../../shared/voice/session-config.js';
import { CallActor, type ActorTuning } from '../../../media-engine/session/actor.js';
import type { AmdSettings } from '../../../shared/voice/amd.js';
import type { AgentMessageRecord, CallEndRecord, CallRecorder, TurnRecord } from '../../../media-engine/session/recorder.js';
import type { CallTransport } from '../../../media-engine/session/transport.js';
import { createSimAsr } from '../../../shared/providers/asr/sim.js';
import { createSimLlm, type SimLlmOptions, type SimLlmProvider } from '../../../shared/providers/llm/sim.js';
import { encodeText } from '../../../shared/providers/sim/codec.js';
import { createSimTts, type SimTtsOptions } from '../../../shared/providers/tts/sim.js';
import type { AsrProvider, LlmMessage, LlmProvider, TtsProvider } from '../../../shared/providers/types.js';
import type { CallTelemetry } from '../../../shared/observability/call-telemetry.js';
import type { CallConnectors } from '../../../media-engine/session/connector-tools.js';
import type { OutboundClient } from '../../../shared/outbound/index.js';
import { captureLogger } from '../../helpers/infra.js';
import { sessionConfig } from '../../helpers/session-config.js';

const FRAME_MS = 20;
const FRAME_SAMPLES = 320; // 20 ms at 16 kHz

export class MemoryTransport implements CallTransport {
  /** The harness speaks 16 kHz frames whatever the kind (the real carrier transport delivers 8 kHz). */
  readonly inRateHz = 16000;
  readonly outRateHz = 16000;
  readonly leadMs = 100;
  readonly events: ServerEvent[] = [];
  readonly marks: string[] = [];
  audioFrames = 0;
  clears = 0;
  closed?: { code: number; reason: string };
  constructor(readonly kind: 'browser' | 'twilio' = 'browser') {}
  sendEvent(ev: ServerEvent): void {
    this.events.push(ev);
  }
  sendAudio(): void {
    this.audioFrames++;
  }
  clearAudio(): void {
    this.clears++;
  }
  mark(name: string): void {
    this.marks.push(name);
  }
  close(code: number, reason: string): void {
    this.closed ??= { code, reason };
  }
  of<T extends ServerEvent['type']>(type: T): Array<Extract<ServerEvent, { type: T }>> {
    return this.events.filter((e): e is Extract<ServerEvent, { type: T }> => e.type === type);
  }
  /** Event types in order (text deltas left out: their count depends on chunking). */
  types(): string[] {
    return this.events.map((e) => e.type).filter((t) => t !== 'llm_chunk' && t !== 'interim_transcription');
  }
}

/** What the actor handed to the durable record. */
export class MemoryRecorder implements CallRecorder {
  /** As the records writer with an audio store: the reply's audio is kept. */
  readonly keepsAgentAudio = true;
  started = false;
  readonly turns: TurnRecord[] = [];
  readonly agentMessages: AgentMessageRecord[] = [];
  ended?: CallEndRecord;
  start(): void {
    this.started = true;
  }
  turn(rec: TurnRecord): void {
    this.turns.push(rec);
  }
  agentMessage(rec: AgentMessageRecord): void {
    this.agentMessages.push(rec);
  }
  end(rec: CallEndRecord): void {
    this.ended = rec;
  }
}

export interface ActorHarness {
  actor: CallActor;
  clock: SimulatedClock;
  transport: MemoryTransport;
  recorder: MemoryRecorder;
  llm: SimLlmProvider;
  /** The messages of every LLM request, in order. */
  requests: LlmMessage[][];
  logLines: string[];
  /** Lets the runner's promises settle (no simulated time passes). */
  settle(): Promise<void>;
  /** Advances simulated time in 20 ms steps, pacing audio, until `done()` or `maxMs`. Returns done(). */
  runUntil(done: () => boolean, maxMs?: number): Promise<boolean>;
  /** The caller says `text` (sim-coded audio, 20 ms frames in simulated real time). */
  speak(text: string): Promise<void>;
  /** `ms` of caller silence (digital zero frames), time and pacing moving on. */
  silence(ms: number): Promise<void>;
  /** `ms` of voiced sound the VAD hears but the sim ASR cannot read (one 1 kHz tone). */
  hum(ms: number): Promise<void>;
}

export interface HarnessOptions {
  llm?: SimLlmOptions;
  /** Wraps the sim LLM (e.g. to record requests); the harness still counts through the sim one. */
  wrapLlm?: (sim: LlmProvider) => LlmProvider;
  /** Replaces the sim ASR (e.g. one without interim results). */
  asr?: AsrProvider;
  /** Options of the sim TTS (e.g. a time to first byte). */
  simTts?: Omit<SimTtsOptions, 'clock'>;
  /** Wraps the sim TTS (e.g. to make it fail). */
  wrapTts?: (sim: TtsProvider) => TtsProvider;
  /** Answering-machine policy (outbound carrier calls). */
  amd?: AmdSettings;
  /** Transport kind: `twilio` makes final messages wait for their mark. Default browser. */
  transport?: 'browser' | 'twilio';
  tuning?: Partial<ActorTuning>;
  /** Metrics and traces of the call (shared/observability). */
  telemetry?: CallTelemetry;
  /** Credit time allowance of the call (BILLING_ENABLED); default none. */
  allowanceMs?: number;
  /** The engine's connector (connector tools); default none. */
  connectors?: CallConnectors;
  /** Portal hand-off request (issue 21); default none. */
  requestHandoff?: () => void;
  /** The outbound client HTTP tools go through; default none (tool calls refused). */
  outbound?: OutboundClient;
}

export function actorHarness(overrides: Partial<SessionConfig> = {}, opts: HarnessOptions = {}): ActorHarness {
  const clock = new SimulatedClock();
  const transport = new MemoryTransport(opts.transport);
  const recorder = new MemoryRecorder();
  const llm = createSimLlm({ clock, ...opts.llm });
  const requests: LlmMessage[][] = [];
  const recording: LlmProvider = { ...llm, stream: (req) => (requests.push(req.messages), llm.stream(req)) };
  const { logger, lines } = captureLogger();
  const actor = new CallActor(
    {
      config: sessionConfig({ welcome_message: '', silence_timeout_ms: 600_000, ...overrides }),
      transport,
      providers: { asr: opts.asr ?? createSimAsr({ clock }), llm: opts.wrapLlm ? opts.wrapLlm(recording) : recording, tts: opts.wrapTts ? opts.wrapTts(createSimTts({ clock, ...opts.simTts })) : createSimTts({ clock, ...opts.simTts }) },
      profile: 'browser_headset',
      clock,
      logger,
      recorder,
      amd: opts.amd,
      telemetry: opts.telemetry,
      allowanceMs: opts.allowanceMs,
      connectors: opts.connectors,
      requestHandoff: opts.requestHandoff,
      outbound: opts.outbound,
    },
    opts.tuning,
  );
  const turns = async (n: number): Promise<void> => {
    for (let i = 0; i < n; i++) await new Promise<void>((resolve) => setImmediate(resolve));
  };
  const settle = (): Promise<void> => turns(20);
  // One frame of caller audio: time moves 20 ms, due agent audio goes out. A few event-loop turns
  // per frame deliver the ASR events of that frame (the sim ASR's pump is a couple of promises).
  const step = async (frame: Int16Array): Promise<void> => {
    clock.advance(FRAME_MS);
    actor.onAudio(frame);
    actor.pace(clock.monotonicMs());
    await turns(3);
  };
  const silent = new Int16Array(FRAME_SAMPLES);
  // Whole cycles per frame (20 per 20 ms), so consecutive frames join without a click.
  const tone = Int16Array.from({ length: FRAME_SAMPLES }, (_, i) => Math.round(8000 * Math.sin((2 * Math.PI * 1000 * i) / 16000)));
  return {
    actor,
    clock,
    transport,
    recorder,
    llm,
    requests,
    logLines: lines,
    settle,
    async runUntil(done, maxMs = 120_000) {
      for (let t = 0; t < maxMs && !done(); t += FRAME_MS) {
        await settle();
        if (done()) break;
        clock.advance(FRAME_MS);
        actor.pace(clock.monotonicMs());
      }
      return done();
    },
    async speak(text) {
      const audio = encodeText(text, 16000);
      for (let i = 0; i < audio.length; i += FRAME_SAMPLES) {
        const frame = new Int16Array(FRAME_SAMPLES);
        frame.set(audio.subarray(i, i + FRAME_SAMPLES));
        await step(frame);
      }
    },
    async silence(ms) {
      for (let t = 0; t < ms; t += FRAME_MS) await step(silent);
    },
    async hum(ms) {
      for (let t = 0; t < ms; t += FRAME_MS) await step(tone);
    },
  };
}
