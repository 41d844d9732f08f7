/**
 * CallActor: one per call; owns all of the call's state. Inputs arrive through `post()` (a FIFO
 * mailbox processed to completion) or, for audio, `onAudio()` (the per-frame path: synchronous,
 * allocation-free). Async work (ASR stream, agent runs) reports back through the mailbox; results
 * of a superseded run are dropped by run id. Turn states: listening -> user_speaking -> thinking ->
 * speaking -> listening. See NOTES.md for the barge-in and idle rules.
 */
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { VadProfile } from '../audio/vad.js';
import type { AsrEvent, AsrProvider, AsrStream, LlmMessage, LlmProvider, TtsProvider } from '../providers/types.js';
import { withTtsRetry } from '../providers/retry.js';
import { amdStart, amdStep, type AmdEffect, type AmdInput, type AmdMsg, type AmdSettings, type AmdState } from './amd.js';
import { isBackchannel, isLikelyEcho, mayBecomeBackchannel } from './backchannel.js';
import { CallerSpeech } from './caller-speech.js';
import type { CallMsg, TurnMsg } from './messages.js';
import type { CallRecorder } from './recorder.js';
import { isModelMsg, recordRunMsg } from './run-events.js';
import { RunState, type RunKind } from './run-state.js';
import { SpeechOutput } from './speech-output.js';
import type { CallTransport } from './transport.js';
import { runTurn } from './turn-runner.js';

export type Phase = 'listening' | 'user_speaking' | 'thinking' | 'speaking';

export interface CallActorDeps {
  config: SessionConfig;
  transport: CallTransport;
  providers: { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider };
  /** An ASR stream opened ahead of time (pre-warm); else one is opened at start. */
  asrStream?: AsrStream;
  profile: VadProfile;
  clock: Clock;
  logger: Logger;
  recorder?: CallRecorder;
  /** Called once when the call is over (after `call_ended`, socket closing). */
  onClosed?: (reason: string) => void;
  /** Inbound audio format pushed to ASR: PCM 16 kHz (browser) or raw mu-law 8 kHz (carrier, when the ASR takes it). */
  asrInput?: { encoding: 'linear16' | 'mulaw'; sampleRateHz: number };
  /** Answering-machine policy of an outbound carrier call (`amd.ts`); absent: no detection. */
  amd?: AmdSettings;
  /** Transport counters (carrier jitter buffer) copied into each turn record's metadata. */
  transportStats?: () => unknown;
}

export interface ActorTuning {
  /** Silence after speech that ends a caller turn once text is final. Default 500 ms. */
  endpointSilenceMs: number;
  /** Unconfirmed barge-in gives up after this. Default 2000 ms. */
  bargeConfirmMs: number;
  /** Longest the goodbye may play before hanging up. Default 8000 ms. */
  hangupGraceMs: number;
  /** After a final message on a carrier call, wait this long for its mark (heard) before hanging up anyway. Default 3000 ms. */
  markGraceMs: number;
}

const DEFAULT_TUNING: ActorTuning = { endpointSilenceMs: 500, bargeConfirmMs: 2000, hangupGraceMs: 8000, markGraceMs: 3000 };
const NUDGE_TEXT = 'Are you still there?';
const GOODBYE_TEXT = "I haven't heard from you, so I'll end the call now. Goodbye!";

export class CallActor {
  readonly config: SessionConfig;
  phase: Phase = 'listening';
  /** Number of the caller turn in progress or last completed (0 = the welcome). */
  turn = 0;
  private readonly d: CallActorDeps;
  private readonly t: ActorTuning;
  private readonly caller: CallerSpeech;
  private readonly output: SpeechOutput;
  private readonly tts: TtsProvider;
  private asr?: AsrStream;
  private history: LlmMessage[] = [];
  private mailbox: Array<CallMsg | AmdMsg> = [];
  private processing = false;
  private run?: RunState;
  private nextRunId = 1;
  private bargeCandidate = false;
  private timers = new Map<string, TimerHandle>();
  private idleAttempts = 0;
  private closed = false;
  private ending = false;
  private startedAtMs: number;
  private completedTurns = 0;
  private latencySumMs = 0;
  private latencyCount = 0;
  private amd?: AmdState;
  /** A run after which the call hangs up (voicemail), and the mark whose echo ends it. */
  private hangupAfter?: { runId: number; reason: string; mark?: string };

  constructor(deps: CallActorDeps, tuning: Partial<ActorTuning> = {}) {
    this.d = deps;
    this.t = { ...DEFAULT_TUNING, ...tuning };
    this.config = deps.config;
    this.caller = new CallerSpeech(deps.clock, deps.profile, deps.config.vad_threshold);
    this.output = new SpeechOutput(deps.transport, deps.clock);
    this.startedAtMs = deps.clock.now();
    // TTS failures before the first chunk are retried; the actor tells the client.
    this.tts = withTtsRetry(deps.providers.tts, {
      clock: deps.clock,
      onRetry: (attempt, backoffMs) => this.emitForRun({ type: 'tts_retry', attempt, backoff_ms: backoffMs }),
      onExhausted: (attempt) => this.emitForRun({ type: 'tts_retry_exhausted', attempt }),
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Starts the call: ASR stream, `pipeline_ready`, then the welcome per `welcome_mode`. */
  start(): void {
    const c = this.config;
    const input = this.d.asrInput ?? { encoding: 'linear16', sampleRateHz: 16000 };
    this.asr = this.d.asrStream ?? this.d.providers.asr.stream({ ...input, language: c.language, model: c.providers.asr.model_name });
    void this.pumpAsr(this.asr);
    this.history.push({ role: 'system', content: c.system_prompt });
    this.d.recorder?.start({
      session_id: c.session_id,
      agent_id: c.agent_id,
      user_id: c.user_id,
      workspace_id: c.workspace_id,
      call_id: c.call_id,
      metadata: { ...c.session_metadata, call_direction: c.call_direction, connection_type: c.connection_type, agent_version: c.agent_version },
      started_at_ms: this.startedAtMs,
    });
    this.emit({ type: 'pipeline_ready', providers: { asr: this.d.providers.asr.label, llm: this.d.providers.llm.label, tts: this.d.providers.tts.label } });
    if (this.d.amd) {
      const r = amdStart(this.d.amd);
      this.amd = r.state;
      this.applyAmd(r.effects);
      return;
    }
    this.greet();
  }

  private greet(): void {
    const c = this.config;
    if (c.welcome_mode !== 'none' && c.welcome_message.trim()) this.startRun('welcome', c.welcome_message);
    else this.armIdle();
  }

  /** Verdict current for this call (`undefined` while waiting or without detection). */
  get amdVerdict(): AmdState['verdict'] {
    return this.amd?.verdict;
  }

  /** Inbound audio: one 20 ms frame of 16 kHz PCM (`raw`: the carrier's mu-law bytes for the ASR). */
  onAudio(pcm16k: Int16Array, raw?: Uint8Array): void {
    // While leave_voicemail holds the greeting, a machine's greeting must not become a caller turn.
    if (this.closed || this.amd?.holding) return;
    this.asr?.push(raw ?? pcm16k);
    const v = this.caller.frame(pcm16k);
    if (v.onset) this.onSpeechOnset();
    if (this.phase === 'user_speaking' && !v.speech && v.silenceMs >= this.t.endpointSilenceMs && !this.timers.has('endpoint')) {
      // Silence long enough: close the turn with what ASR has, after forcing it to finalize.
      if (this.caller.text) this.endUserTurn();
      else {
        this.asr?.flush();
        this.setTimer('endpoint', 1500);
      }
    }
  }

  /** Called by the node's pacer every tick: sends the frames that are due. */
  pace(nowMs: number): void {
    const run = this.run;
    if (this.closed || !run) return;
    const drained = this.output.pace(nowMs);
    if (!run.firstFrameSentAt) run.firstFrameSentAt = this.output.firstFrameSentAtMs;
    if (drained && run.runnerDone) this.finishRun(run);
  }

  post(msg: CallMsg | AmdMsg): void {
    if (this.closed) return;
    this.mailbox.push(msg);
    if (this.processing) return;
    this.processing = true;
    try {
      while (this.mailbox.length && !this.closed) this.handle(this.mailbox.shift()!);
    } catch (err) {
      this.d.logger.error({ err: (err as Error).stack, session: this.config.session_id }, 'call actor failed');
      this.fail('internal error');
    } finally {
      this.processing = false;
    }
  }

  private handle(msg: CallMsg | AmdMsg): void {
    switch (msg.kind) {
      case 'amd_verdict':
        return this.onAmd({ kind: 'verdict', verdict: msg.verdict });
      case 'amd_timer':
        this.timers.delete(`amd_${msg.name}`);
        if (msg.name === 'verdict') return this.onAmd({ kind: 'timeout' });
        return this.endCall(this.hangupAfter?.reason ?? 'ended');
      case 'asr':
        return this.onAsr(msg.event);
      case 'asr_closed':
        if (msg.error) this.d.logger.warn({ session: this.config.session_id, error: msg.error }, 'asr stream closed');
        return;
      case 'turn':
        if (this.run && msg.runId === this.run.id) this.onRunMsg(this.run, msg.msg);
        return;
      case 'timer':
        return this.onTimer(msg.name);
      case 'playback_done':
        if (this.phase === 'listening' && !this.run) this.armIdle();
        return;
      case 'mark':
        // The caller has heard the run: a final message may now hang up; else idle counts from here.
        if (this.hangupAfter?.mark === msg.name) return this.endCall(this.hangupAfter.reason);
        if (msg.name.startsWith('run-') && this.phase === 'listening' && !this.run) this.armIdle();
        return;
      case 'text_inject':
        if (msg.role === 'system') {
          this.history.push({ role: 'system', content: msg.text });
          return;
        }
        if (this.run) this.interrupt();
        this.caller.inject(msg.text);
        this.beginReply(0);
        return;
      case 'end':
        return this.endCall(msg.reason);
      case 'transport_closed':
        return this.close('client_disconnected');
    }
  }

  // ------------------------------------------------------------------ caller speech

  private onSpeechOnset(): void {
    this.cancelTimer('idle');
    this.idleAttempts = 0;
    if (this.phase === 'listening') {
      this.phase = 'user_speaking';
      this.caller.startTurn();
      this.emit({ type: 'user_started_speaking' });
      return;
    }
    if ((this.phase === 'speaking' || this.phase === 'thinking') && this.bargeInAllowed && !this.bargeCandidate) {
      this.bargeCandidate = true;
      this.emit({ type: 'user_started_speaking' });
      this.setTimer('barge_confirm', this.t.bargeConfirmMs);
    }
  }

  private onAsr(ev: AsrEvent): void {
    if (ev.type === 'interim' || ev.type === 'final') {
      const text = ev.text.trim();
      if (!text) return;
      if (this.phase === 'speaking' || this.phase === 'thinking') {
        if (!this.bargeInAllowed) return;
        // A backchannel (or what may still become one) never confirms a barge-in; on speakers,
        // neither does text that is our own voice coming back.
        if (ev.type === 'interim' ? mayBecomeBackchannel(text) : isBackchannel(text)) return;
        if (this.d.profile === 'browser_speakers' && isLikelyEcho(text, this.run?.llmText || this.run?.assistantText || '')) return;
        if (!this.bargeCandidate) this.emit({ type: 'user_started_speaking' });
        this.confirmBargeIn();
      } else if (this.phase === 'listening') {
        // ASR heard speech VAD missed (quiet caller): treat as onset.
        this.onSpeechOnset();
      }
      if (ev.type === 'interim') {
        this.emit({ type: 'interim_transcription', text });
      } else {
        this.caller.addFinal(text);
        if (ev.endOfTurn && this.phase === 'user_speaking') this.endUserTurn();
      }
      return;
    }
    if (ev.type === 'utterance_end' && this.phase === 'user_speaking' && this.caller.text) this.endUserTurn();
    if (ev.type === 'error') this.d.logger.warn({ session: this.config.session_id, error: ev.message, recoverable: ev.recoverable }, 'asr error');
  }

  private endUserTurn(): void {
    this.cancelTimer('endpoint');
    if (!this.caller.text.trim()) {
      this.caller.take();
      this.phase = 'listening';
      this.emit({ type: 'phase_idle' });
      this.armIdle();
      return;
    }
    const speechEnd = this.caller.speechEndMs;
    const asrMs = speechEnd ? Math.max(0, Math.round(this.d.clock.monotonicMs() - speechEnd)) : 0;
    this.beginReply(asrMs);
  }

  /** Starts the agent's reply to the caller's text (from speech or injection). */
  private beginReply(asrMs: number): void {
    const { text, speechMs } = this.caller.take();
    this.turn++;
    this.emit({ type: 'transcription', text, turn: this.turn, speech_duration_ms: speechMs, asr_latency_ms: asrMs });
    this.history.push({ role: 'user', content: text });
    this.startRun('reply', undefined, asrMs, text);
  }

  // ------------------------------------------------------------------ barge-in

  private confirmBargeIn(): void {
    this.cancelTimer('barge_confirm');
    this.bargeCandidate = false;
    this.interrupt();
    this.phase = 'user_speaking';
    this.caller.startTurn();
  }

  /** Cancels the running agent turn; keeps only what the caller actually heard. */
  private interrupt(): void {
    const run = this.run;
    if (!run) return;
    run.abort.abort();
    run.interrupted = true;
    const heard = this.output.heardText();
    this.output.flush();
    this.caller.setAgentSpeaking(false);
    this.run = undefined;
    if (run.kind !== 'reply') {
      if (heard) this.history.push({ role: 'assistant', content: heard });
      return;
    }
    if (heard) {
      this.history.push({ role: 'assistant', content: heard });
    } else {
      // Nothing was heard: fold the unanswered caller text into the next turn instead of leaving
      // two user messages in a row (some models refuse that) or a reply nobody heard.
      const last = this.history[this.history.length - 1];
      if (last?.role === 'user') {
        this.history.pop();
        this.caller.addFinal(last.content);
      }
    }
    this.completeTurn(run, heard);
  }

  // ------------------------------------------------------------------ agent runs

  private startRun(kind: RunKind, speakOnly?: string, asrMs = 0, userText = ''): void {
    const now = this.d.clock.monotonicMs();
    const run = new RunState(this.nextRunId++, kind, this.turn, kind === 'reply' ? this.caller.speechEndMs || now : now, asrMs, userText, this.d.clock.now());
    this.run = run;
    this.output.resetTurn();
    this.phase = kind === 'reply' ? 'thinking' : 'speaking';
    this.cancelTimer('idle');
    const providers = this.config.providers;
    void runTurn({
      messages: [...this.history],
      tools: this.config.tools,
      llm: this.d.providers.llm,
      tts: this.tts,
      ttsVoice: providers.tts.voice,
      ttsModel: providers.tts.model_name,
      language: this.config.language,
      ttsSampleRateHz: this.d.transport.outRateHz,
      speakOnly,
      signal: run.abort.signal,
      now: () => this.d.clock.monotonicMs(),
      post: (m) => this.post({ kind: 'turn', runId: run.id, msg: m }),
    }).catch((err: unknown) => {
      this.d.logger.error({ err: (err as Error).stack, session: this.config.session_id }, 'agent run failed');
      this.post({ kind: 'turn', runId: run.id, msg: { kind: 'run_done', appended: [], assistantText: '' } });
    });
  }

  private onRunMsg(run: RunState, m: TurnMsg): void {
    if (isModelMsg(m)) {
      const ev = recordRunMsg(run, m, this.config.session_id);
      if (ev) this.emit(ev);
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
          this.phase = 'speaking';
          this.caller.setAgentSpeaking(true);
          this.emit({ type: 'tts_audio_start', turn: run.turn });
        }
        this.output.enqueue(m.chunk.samples, m.chunk.sampleRateHz);
        // Send the lead at once instead of waiting for the next pacer tick: first audio sooner.
        this.pace(this.d.clock.monotonicMs());
        return;
      case 'tts_piece_end':
        this.output.endSegment();
        return;
      case 'run_done':
        run.runnerDone = true;
        run.appended = m.appended;
        run.assistantText = m.assistantText;
        if (this.output.queuedSamples === 0) this.finishRun(run);
        return;
    }
  }

  /** All audio of the run has been sent and the runner is done. */
  private finishRun(run: RunState): void {
    if (this.run !== run) return;
    this.run = undefined;
    this.caller.setAgentSpeaking(false);
    this.phase = 'listening';
    this.bargeCandidate = false;
    this.cancelTimer('barge_confirm');
    this.d.transport.mark(`run-${run.id}`);
    if (run.kind === 'reply') {
      this.history.push(...run.appended);
      this.completeTurn(run, run.assistantText);
    } else if (run.assistantText) {
      this.history.push({ role: 'assistant', content: run.assistantText });
    }
    if (this.hangupAfter?.runId === run.id) {
      // Carrier: hang up once the mark says the message was heard (closing the stream earlier
      // cuts the audio still buffered at the carrier), or after a grace period.
      if (this.d.transport.kind === 'browser') return this.endCall(this.hangupAfter.reason);
      this.hangupAfter.mark = `run-${run.id}`;
      this.setAmdTimer('hangup', this.t.markGraceMs + this.d.transport.leadMs);
      return;
    }
    if (run.kind === 'goodbye') {
      this.endCall('idle_timeout');
      return;
    }
    if (this.caller.text) {
      // Caller text that arrived while the agent was speaking (barge-in disabled) or folded in.
      this.beginReply(0);
      return;
    }
    if (run.kind === 'reply' && this.config.max_turns > 0 && this.turn >= this.config.max_turns) {
      this.endCall('max_turns');
      return;
    }
    this.armIdle();
  }

  private completeTurn(run: RunState, assistantText: string): void {
    const timing = run.timing();
    this.completedTurns++;
    if (timing.total_ms > 0) {
      this.latencySumMs += timing.total_ms;
      this.latencyCount++;
    }
    this.emit({ type: 'turn_complete', turn: run.turn, user_text: run.userText, assistant_text: assistantText, timing });
    this.d.recorder?.turn({
      turn: run.turn,
      user_text: run.userText,
      assistant_text: assistantText,
      interrupted: run.interrupted,
      timing,
      asr: { provider: this.d.providers.asr.label, model: this.config.providers.asr.model_name },
      llm: { provider: this.d.providers.llm.label, model: this.d.providers.llm.model, tokens_input: run.tokensIn, tokens_output: run.tokensOut },
      tts: { provider: this.d.providers.tts.label },
      tool_calls: run.toolCalls,
      user_audio: this.caller.takeAudio(),
      started_at_ms: run.startedAtMs,
      metadata: this.d.transportStats ? { transport: this.d.transportStats() } : undefined,
    });
  }

  // ------------------------------------------------------------------ answering machine

  private onAmd(input: AmdInput): void {
    if (!this.d.amd || !this.amd) return;
    const r = amdStep(this.d.amd, this.amd, input);
    if (r.state === this.amd) return;
    this.amd = r.state;
    this.cancelTimer('amd_verdict');
    this.d.logger.info({ session: this.config.session_id, verdict: r.state.verdict, treatedAs: r.state.treatedAs, policy: this.d.amd.policy }, 'amd verdict');
    this.applyAmd(r.effects);
  }

  private applyAmd(effects: AmdEffect[]): void {
    for (const e of effects) {
      if (e.kind === 'greet') this.greet();
      else if (e.kind === 'arm_timeout') this.setAmdTimer('verdict', e.ms);
      else if (e.kind === 'hangup') this.endCall(e.reason);
      else if (e.kind === 'speak_then_hangup') {
        if (this.run) this.interrupt();
        this.ending = true;
        this.cancelTimer('idle');
        this.startRun('welcome', e.text);
        this.hangupAfter = { runId: this.run!.id, reason: e.reason };
      }
    }
  }

  private get bargeInAllowed(): boolean {
    return this.config.interrupt_enabled && !this.hangupAfter;
  }

  private setAmdTimer(name: 'verdict' | 'hangup', ms: number): void {
    this.cancelTimer(`amd_${name}`);
    this.timers.set(`amd_${name}`, this.d.clock.setTimeout(() => this.post({ kind: 'amd_timer', name }), ms));
  }

  // ------------------------------------------------------------------ idle, timers, end

  private armIdle(): void {
    if (this.ending || this.closed) return;
    this.setTimer('idle', this.config.silence_timeout_ms);
  }

  private onTimer(name: 'barge_confirm' | 'idle' | 'endpoint' | 'hangup'): void {
    this.timers.delete(name);
    if (name === 'barge_confirm') {
      if (this.bargeCandidate) {
        this.bargeCandidate = false;
        this.emit({ type: 'phase_idle' });
      }
    } else if (name === 'endpoint') {
      if (this.phase === 'user_speaking') this.endUserTurn();
    } else if (name === 'hangup') {
      this.endCall('idle_timeout');
    } else if (name === 'idle' && this.phase === 'listening' && !this.run) {
      this.idleAttempts++;
      const max = this.config.idle_max_attempts;
      if (this.idleAttempts <= max) {
        this.emit({ type: 'idle_check', text: NUDGE_TEXT, attempt: this.idleAttempts, max_attempts: max });
        this.startRun('nudge', NUDGE_TEXT);
      } else {
        this.ending = true;
        this.emit({ type: 'idle_disconnect', text: GOODBYE_TEXT, reason: 'no_response', total_attempts: max });
        this.startRun('goodbye', GOODBYE_TEXT);
        this.setTimer('hangup', this.t.hangupGraceMs);
      }
    }
  }

  private setTimer(name: 'barge_confirm' | 'idle' | 'endpoint' | 'hangup', ms: number): void {
    this.cancelTimer(name);
    this.timers.set(name, this.d.clock.setTimeout(() => this.post({ kind: 'timer', name }), ms));
  }

  private cancelTimer(name: string): void {
    const h = this.timers.get(name);
    if (h) this.d.clock.clearTimeout(h);
    this.timers.delete(name);
  }

  /** Ends the call on purpose: `call_ended`, then the socket closes. */
  endCall(reason: string): void {
    if (this.closed) return;
    this.emit({ type: 'call_ended', reason });
    this.close(reason);
  }

  private fail(message: string): void {
    if (this.closed) return;
    this.emit({ type: 'error', message, fatal: true });
    this.endCall('error');
  }

  /** Idempotent teardown: cancels work, closes ASR, writes the call end, closes the socket. */
  close(reason: string): void {
    if (this.closed) return;
    const run = this.run;
    if (run) {
      run.abort.abort();
      if (run.kind === 'reply') {
        run.interrupted = true;
        this.completeTurn(run, this.output.heardText());
      }
      this.run = undefined;
    }
    this.closed = true;
    for (const h of this.timers.values()) this.d.clock.clearTimeout(h);
    this.timers.clear();
    this.asr?.close();
    const now = this.d.clock.now();
    this.d.recorder?.end({
      status: reason === 'error' ? 'failed' : 'completed',
      reason,
      total_turns: this.completedTurns,
      total_duration_ms: now - this.startedAtMs,
      avg_response_latency_ms: this.latencyCount ? Math.round(this.latencySumMs / this.latencyCount) : 0,
      ended_at_ms: now,
    });
    this.d.transport.close(1000, reason);
    this.d.onClosed?.(reason);
  }

  private async pumpAsr(stream: AsrStream): Promise<void> {
    try {
      for await (const event of stream) this.post({ kind: 'asr', event });
      this.post({ kind: 'asr_closed' });
    } catch (err) {
      this.post({ kind: 'asr_closed', error: (err as Error).message });
    }
  }

  private emitForRun(ev: ServerEvent): void {
    // Retry callbacks fire inside the runner's async work; route them through the mailbox order.
    if (!this.closed) this.emit(ev);
  }

  private emit(ev: ServerEvent): void {
    this.d.transport.sendEvent(ev);
  }
}
