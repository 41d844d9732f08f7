/**
 * The agent's side of a call: at most one run at a time (a reply, the welcome, a nudge, the
 * goodbye), its runner (`runTurn`, async, reporting through the mailbox tagged with the run id) and
 * its audio output. Messages of any other run id are dropped: that is how superseded runs die.
 * The actor decides when runs start and what a finished or cancelled run means for the call.
 */
import { maskSessionId } from '../../shared/ids.js';
import { redactSecrets } from '../../shared/providers/redact.js';
import { providerKeys } from '../../shared/voice/session-config.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { LlmMessage, TtsProvider } from '../../shared/providers/types.js';
import type { CallActorDeps } from './actor-deps.js';
import type { CallMsg, TurnMsg } from './messages.js';
import { isModelMsg, recordRunMsg } from './run-events.js';
import { RunState, type RunKind } from './run-state.js';
import { SpeechOutput } from './speech-output.js';
import { runTurn } from './turn-runner.js';
import { buildCallTools, type CallTool } from './call-tools.js';
import type { FlowEffect, FlowState } from './flow-state.js';
import { flowStepContext } from './flow-tools.js';

export interface RunHost {
  emit(ev: ServerEvent): void;
  post(msg: CallMsg): void;
  /** The run's first audio is queued: the agent is speaking now. */
  onSpeaking(run: RunState): void;
  /** All audio of the run has been sent and its runner is done. */
  onFinished(run: RunState): void;
  /** A flow function of the current run moved the flow (transition, variables). */
  onFlowEffects(run: RunState, effects: FlowEffect[]): void;
}

export class AgentRuns {
  /** The running agent turn, if any. */
  current?: RunState;
  private nextRunId = 1;
  private readonly output: SpeechOutput;
  private readonly tools: CallTool[];

  constructor(
    private readonly d: CallActorDeps,
    /** The call's TTS (with retries, `withTtsRetry`). */
    private readonly tts: TtsProvider,
    private readonly host: RunHost,
  ) {
    this.output = new SpeechOutput(d.transport, d.clock);
    this.tools = buildCallTools(d.config, { outbound: d.outbound, clock: d.clock, connectors: d.connectors, knowledge: d.knowledge, requestHandoff: d.requestHandoff });
  }

  /**
   * Starts a run. `speakOnly`: speak this text (no LLM); else answer `messages`. `flow`: the call's
   * flow state; the run works on a copy of it (see flow-state.ts).
   */
  start(kind: RunKind, turn: number, originMs: number, messages: LlmMessage[], speakOnly?: string, asrMs = 0, userText = '', flow?: FlowState): RunState {
    const { clock, config } = this.d;
    const run = new RunState(this.nextRunId++, kind, turn, originMs, asrMs, userText, clock.now());
    this.current = run;
    // A run's audio is kept for its record (the reply's turn, or the welcome's, nudge's or goodbye's
    // agent message) when the record stores it; it is handed over when the run ends or is cut.
    this.output.resetTurn(this.d.recorder?.keepsAgentAudio === true);
    const providers = config.providers;
    const step =
      flow && speakOnly === undefined
        ? flowStepContext(flow.clone(), { callTools: this.tools, httpTools: config.tools, runDeps: { outbound: this.d.outbound, clock }, basePrompt: config.system_prompt })
        : undefined;
    void runTurn({
      messages,
      tools: this.tools,
      step,
      llm: this.d.providers.llm,
      tts: this.tts,
      ttsVoice: flow?.node.voice ?? providers.tts.voice,
      ttsModel: providers.tts.model_name,
      language: config.language,
      ttsSampleRateHz: this.d.transport.outRateHz,
      speakOnly,
      signal: run.abort.signal,
      now: () => clock.monotonicMs(),
      post: (m) => this.host.post({ kind: 'turn', runId: run.id, msg: this.redacted(m) }),
    }).catch((err: unknown) => {
      this.d.logger.error({ err, session: maskSessionId(config.session_id) }, 'agent run failed');
      this.host.post({ kind: 'turn', runId: run.id, msg: { kind: 'run_done', appended: [], assistantText: '' } });
    });
    return run;
  }

  /** Vendor error text on its way to the socket, the record and the log, without the call's provider keys. */
  private redacted(m: TurnMsg): TurnMsg {
    if (m.kind !== 'llm_error' && m.kind !== 'tts_failed') return m;
    return { ...m, message: redactSecrets(m.message, providerKeys(this.d.config)) };
  }

  /** A runner message; dropped unless it belongs to the current run. */
  onMsg(runId: number, m: TurnMsg): void {
    const run = this.current;
    if (!run || run.id !== runId) return;
    if (isModelMsg(m)) {
      if (m.kind === 'llm_started') run.stepStartedAt[m.step - 1] = m.atMs;
      const ev = recordRunMsg(run, m, this.d.config.session_id);
      if (ev) this.host.emit(ev);
      if (m.kind === 'tool_result' && m.result.effects?.length) this.host.onFlowEffects(run, m.result.effects);
      // A mute agent must be explainable from the log (a revoked TTS key said nothing anywhere).
      if (m.kind === 'llm_error') this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), turn: run.turn, step: m.step, code: m.code, error: m.message }, 'llm failed');
      if (m.kind === 'tool_result' && m.result.refused) this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), turn: run.turn, tool: m.call.name, error: m.result.error }, 'tool call refused by the outbound address policy');
      if (m.kind === 'tts_failed') this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), turn: run.turn, code: m.code, partial: m.partial, error: m.message }, 'tts failed');
      return;
    }
    switch (m.kind) {
      case 'tts_piece_start':
        if (!run.ttsRequestAt) run.ttsRequestAt = this.d.clock.monotonicMs();
        this.output.beginSegment(m.text);
        return;
      case 'tts_audio':
        if (!run.audioStarted) {
          run.audioStarted = true;
          run.ttsFirstAudioAt = this.d.clock.monotonicMs();
          this.host.onSpeaking(run);
        }
        this.output.enqueue(m.chunk.samples, m.chunk.sampleRateHz);
        // Send the lead at once instead of waiting for the next pacer tick: first audio sooner.
        this.pace(this.d.clock.monotonicMs());
        return;
      case 'tts_piece_end':
        this.output.endSegment();
        // The piece's last partial frame may go now.
        this.pace(this.d.clock.monotonicMs());
        return;
      case 'run_done':
        run.runnerDone = true;
        this.output.endInput();
        run.appended = m.appended;
        run.assistantText = m.assistantText;
        if (this.output.queuedSamples === 0) this.finish(run);
        return;
    }
  }

  /** The current reply's audio sent so far, for its turn record (taken once). */
  takeSentAudio(): { samples: Int16Array; sampleRateHz: number } | undefined {
    return this.output.takeSentAudio();
  }

  /** Sends the frames due at `nowMs`; the run finishes when its audio is out and the runner done. */
  pace(nowMs: number): void {
    const run = this.current;
    if (!run) return;
    const drained = this.output.pace(nowMs);
    if (!run.firstFrameSentAt) run.firstFrameSentAt = this.output.firstFrameSentAtMs;
    if (drained && run.runnerDone) this.finish(run);
  }

  /**
   * Barge-in: cancels the current run (one abort for LLM, tools and TTS) and drops its queued
   * audio here and at the far end. Returns the run and what the caller heard of it.
   */
  interrupt(): { run: RunState; heard: string } | undefined {
    const run = this.current;
    if (!run) return undefined;
    run.abort.abort();
    run.interrupted = true;
    const heard = this.output.heardText();
    this.output.flush();
    this.current = undefined;
    return { run, heard };
  }

  /**
   * Call teardown: cancels the current run; nothing is flushed at the far end (the socket is
   * closing), the queued audio's blocks go back to the pool.
   */
  abandon(): { run: RunState; heard: string } | undefined {
    const run = this.current;
    if (!run) return undefined;
    run.abort.abort();
    this.current = undefined;
    const heard = this.output.heardText();
    this.output.release();
    return { run, heard };
  }

  private finish(run: RunState): void {
    if (this.current !== run) return;
    this.current = undefined;
    this.host.onFinished(run);
  }
}
