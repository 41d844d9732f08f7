/**
 * CallActor: one per call; owns all of the call's state. Inputs arrive through `post()` (a FIFO
 * mailbox processed to completion) or, for audio, `onAudio()` (the per-frame path: synchronous,
 * allocation-free). Async work (ASR stream, agent runs) reports back through the mailbox; results
 * of a superseded run are dropped by run id (`agent-runs.ts`). Turn states: listening ->
 * user_speaking -> thinking -> speaking -> listening. See NOTES.md for the barge-in and idle rules.
 * Helpers, each owning one part of the state: `CallerTurns` (onset, endpointing, barge-in window),
 * `AgentRuns` (the running agent turn and its audio), `Conversation` (history and record),
 * `CallInjections`, `AmdControl`, `IdleNudges`, `CallTimers`. This file wires them and decides
 * what happens between them: when replies start, what a finished or cut run means, how calls end.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { AsrStream } from '../../shared/providers/types.js';
import { withTtsRetry } from '../../shared/providers/retry.js';
import { DEFAULT_TUNING, type ActorTuning, type CallActorDeps, type Phase } from './actor-deps.js';
import { AgentRuns } from './agent-runs.js';
import { openAsr } from './asr-feed.js';
import { providerKeys } from '../../shared/voice/session-config.js';
import { redactSecrets } from '../../shared/providers/redact.js';
import type { AmdMsg, AmdState } from './amd.js';
import { AmdControl, type AmdHost } from './amd-control.js';
import { CallTimers, type CallTimerName } from './call-timers.js';
import { CallerSpeech } from './caller-speech.js';
import { CallerTurns } from './caller-turns.js';
import { Conversation } from './conversation.js';
import { IdleNudges } from './idle.js';
import { CREDIT_EXHAUSTED_EVENT, CREDIT_NOTICE_TEXT, INSUFFICIENT_BALANCE } from './credit.js';
import { CallInjections, type InjectionCallState } from './actor-injection.js';
import type { InjectVerdict } from './injection.js';
import { resolveCallLimits } from './limits.js';
import { Mailbox } from './mailbox.js';
import { Resampler } from '../audio/resampler.js';
import type { CallMsg } from './messages.js';
import { RunState, type RunKind } from './run-state.js';
import { maskSessionId } from '../../shared/ids.js';
import { FlowState, type FlowEffect } from './flow-state.js';

/** `error.code` on the socket when the ASR stopped for good mid-call (non-fatal: typed text still works). */
export const ASR_UNAVAILABLE = 'asr_unavailable';
/** No caller audio for this long mid-turn: the missing frames count as silence (see watchInboundGap). */
export const AUDIO_GAP_MS = 1000;
const FRAME_MS = 20;
/** Silent frames fed in one pacer tick at most (the turn ends within a few ticks anyway). */
const MAX_GAP_FRAMES_PER_TICK = 50;

export type { ActorTuning, CallActorDeps, Phase } from './actor-deps.js';

export class CallActor {
  readonly config: CallActorDeps['config'];
  phase: Phase = 'listening';
  /** A caller frame arrived since the last pacer tick (watchInboundGap). */
  private audioSinceTick = false;
  /** The ASR's last error (redacted): the cause told with `asr_unavailable` when the stream then ends. */
  private lastAsrError?: string;
  private lastAudioAtMs = 0;
  /** 20 ms of digital silence at the inbound rate, fed in for audio that stopped mid-turn. */
  private readonly silentFrame: Int16Array;
  /** Number of the caller turn in progress or last completed (0 = the welcome). */
  turn = 0;
  private readonly d: CallActorDeps;
  private readonly t: ActorTuning;
  private readonly caller: CallerSpeech;
  private readonly runs: AgentRuns;
  private readonly timers: CallTimers;
  private readonly idle: IdleNudges;
  private readonly amd: AmdControl;
  private readonly amdHost: AmdHost;
  private readonly injections: CallInjections;
  private readonly callerTurns: CallerTurns;
  private asr?: AsrStream;
  private readonly asrResampler?: Resampler;
  /** The LLM history and the durable record. */
  private readonly conversation: Conversation;
  private readonly mailbox: Mailbox<CallMsg | AmdMsg>;
  private closed = false;
  private ending = false;
  /** A flow `transfer` node asked the portal for a person (issue 21). */
  private handoffRequested = false;
  /** Fixed words (`say`) waiting for the run the caller is hearing to finish. */
  private pendingSay?: string;
  /** The time allowance (`allowanceMs`) is spent: the next turn boundary ends the call. */
  private creditSpent = false;
  /** The mark of the last run before a carrier call ends (endWhenHeard). */
  private heardMark = '';
  /** Keys of the entry being typed (flushDtmf). */
  private dtmfDigits = '';
  /** Why the call ends once the goodbye run (idle or credit notice) is over. */
  private goodbyeReason = 'idle_timeout';
  /** `flow` mode: where the call is in the agent's graph (flow-state.ts); absent: single prompt. */
  private readonly flow?: FlowState;

  constructor(deps: CallActorDeps, tuning: Partial<ActorTuning> = {}) {
    this.d = deps;
    this.t = { ...DEFAULT_TUNING, ...tuning };
    this.config = deps.config;
    this.caller = new CallerSpeech(deps.clock, deps.profile, deps.config.vad_threshold, deps.transport.inRateHz);
    this.silentFrame = new Int16Array((deps.transport.inRateHz * FRAME_MS) / 1000);
    // Only an ASR that cannot take the call's native rate costs a resampler per frame.
    const asrRateHz = deps.asrInput?.sampleRateHz ?? 16000;
    if (deps.asrInput?.encoding !== 'mulaw' && asrRateHz !== deps.transport.inRateHz) this.asrResampler = new Resampler(deps.transport.inRateHz, asrRateHz);
    this.mailbox = new Mailbox<CallMsg | AmdMsg>(
      (m) => this.handle(m),
      () => !this.closed,
      (err) => {
        this.d.logger.error({ err, session: maskSessionId(this.config.session_id) }, 'call actor failed');
        this.fail('internal error');
      },
    );
    if (deps.config.flow) this.flow = new FlowState(deps.config.flow, deps.config.dynamic_variables);
    const limits = resolveCallLimits(deps.config.call_limits);
    this.conversation = new Conversation(
      deps,
      limits,
      deps.clock.now(),
      (ev) => this.emit(ev),
      () => this.caller.takeAudio(),
      () => this.runs.takeSentAudio(),
    );
    this.timers = new CallTimers(deps.clock, (m) => this.post(m));
    this.idle = new IdleNudges(deps.config.idle_max_attempts);
    this.amd = new AmdControl(deps.amd, deps.logger, deps.config.session_id);
    this.amdHost = {
      greet: () => this.greet(),
      armVerdictTimeout: (ms) => this.timers.setAmd('verdict', ms),
      cancelVerdictTimeout: () => this.timers.cancel('amd_verdict'),
      endCall: (reason) => this.endCall(reason),
      speakFinal: (text) => {
        if (this.runs.current) this.interrupt();
        this.ending = true;
        this.timers.cancel('idle');
        return this.startRun('welcome', text).id;
      },
    };
    this.injections = new CallInjections(deps, limits, {
      state: () => this.injectionState(),
      emit: (ev) => this.emit(ev),
      post: (m) => this.post(m),
      endCall: (reason) => this.endCall(reason),
      bargeInAllowed: () => this.bargeInAllowed,
      addSystemNote: (text) => this.conversation.add('system', text),
      foldIntoCallerTurn: (text) => this.caller.addFinal(text),
      interrupt: () => this.interrupt(),
      reply: (text) => {
        this.caller.inject(text);
        this.beginReply(0);
      },
    });
    // TTS failures before the first chunk are retried; the actor tells the client.
    const tts = withTtsRetry(deps.providers.tts, {
      clock: deps.clock,
      onRetry: (attempt, backoffMs) => this.emitForRun({ type: 'tts_retry', attempt, backoff_ms: backoffMs }),
      onExhausted: (attempt) => {
        // The run's TTS failed: its turn record (pipeline events) says so.
        if (this.runs.current) this.runs.current.ttsFailed = true;
        this.emitForRun({ type: 'tts_retry_exhausted', attempt });
      },
    });
    // The caller's side of turn-taking shares the phase and acts on the call through these.
    this.callerTurns = new CallerTurns(deps, this.t, this.caller, this.timers, {
      phase: () => this.phase,
      setPhase: (phase) => (this.phase = phase),
      bargeInAllowed: () => this.bargeInAllowed,
      agentText: () => this.runs.current?.llmText || this.runs.current?.assistantText || '',
      emit: (ev) => this.emit(ev),
      onCallerSpeech: () => {
        this.timers.cancel('idle');
        this.idle.reset();
      },
      flushAsr: () => this.asr?.flush(),
      // A confirmed barge-in (the only interrupt CallerTurns asks for).
      interrupt: () => {
        if (this.interrupt()) this.d.telemetry?.bargeIn();
      },
      beginReply: (asrMs) => this.beginReply(asrMs),
      armIdle: () => this.armIdle(),
    });
    this.runs = new AgentRuns(deps, tts, {
      emit: (ev) => this.emit(ev),
      post: (m) => this.post(m),
      onSpeaking: (run) => {
        this.phase = 'speaking';
        this.caller.setAgentSpeaking(true);
        this.emit({ type: 'tts_audio_start', turn: run.turn });
      },
      onFinished: (run) => this.finishRun(run),
      onFlowEffects: (run, effects) => this.applyFlowEffects(run, effects),
    });
  }

  get isClosed(): boolean {
    return this.closed;
  }

  /** Starts the call: ASR stream, `pipeline_ready`, then the welcome per `welcome_mode`. */
  start(): void {
    this.asr = openAsr(this.d, (m) => this.post(m));
    this.conversation.start();
    this.emit({ type: 'pipeline_ready', providers: { asr: this.d.providers.asr.label, llm: this.d.providers.llm.label, tts: this.d.providers.tts.label } });
    if (this.flow) this.emitNodeEntered();
    if (this.d.allowanceMs !== undefined) this.timers.set('credit', Math.max(0, this.d.allowanceMs));
    if (!this.amd.start(this.amdHost)) this.greet();
  }

  private greet(): void {
    const c = this.config;
    if (c.welcome_mode !== 'none' && c.welcome_message.trim()) this.startRun('welcome', c.welcome_message);
    else this.armIdle();
  }

  /** Verdict current for this call (`undefined` while waiting or without detection). */
  get amdVerdict(): AmdState['verdict'] {
    return this.amd.verdict;
  }

  /**
   * Inbound audio: one 20 ms frame of PCM at the transport's `inRateHz` (`raw`: the carrier's
   * mu-law bytes for the ASR).
   */
  onAudio(pcm: Int16Array, raw?: Uint8Array): void {
    this.audioSinceTick = true;
    // While leave_voicemail holds the greeting, a machine's greeting must not become a caller turn.
    if (this.closed || this.amd.holding) return;
    this.asr?.push(raw ?? (this.asrResampler ? this.asrResampler.process(pcm) : pcm));
    this.callerTurns.frame(pcm);
  }

  /** Called by the node's pacer every tick: sends the frames that are due. */
  pace(nowMs: number): void {
    if (this.closed) return;
    this.runs.pace(nowMs);
    this.watchInboundGap(nowMs);
  }

  /**
   * The caller's audio stopped mid-turn (a muted or stalled client, a carrier hiccup): past
   * AUDIO_GAP_MS the missing frames count as silence for the turn's endpointing, so the turn ends
   * with what was heard instead of waiting for audio that may never come (it did, for minutes).
   */
  private watchInboundGap(nowMs: number): void {
    if (this.audioSinceTick || this.lastAudioAtMs === 0) {
      this.audioSinceTick = false;
      this.lastAudioAtMs = nowMs;
      return;
    }
    if (this.phase !== 'user_speaking' || this.amd.holding) {
      this.lastAudioAtMs = nowMs;
      return;
    }
    for (let n = 0; nowMs - this.lastAudioAtMs >= AUDIO_GAP_MS + FRAME_MS && n < MAX_GAP_FRAMES_PER_TICK && this.phase === 'user_speaking'; n++) {
      this.lastAudioAtMs += FRAME_MS;
      this.callerTurns.frame(this.silentFrame);
    }
  }

  post(msg: CallMsg | AmdMsg): void {
    this.mailbox.post(msg);
  }

  private handle(msg: CallMsg | AmdMsg): void {
    switch (msg.kind) {
      case 'amd_verdict':
        return this.amd.onInput({ kind: 'verdict', verdict: msg.verdict }, this.amdHost);
      case 'amd_timer':
        this.timers.fired(`amd_${msg.name}`);
        return this.amd.onInput({ kind: 'timeout' }, this.amdHost);
      case 'asr':
        if (msg.event.type === 'error') {
          // Vendor text may echo the key it refused: redacted before the log and the socket.
          const message = redactSecrets(msg.event.message, providerKeys(this.config));
          // Only an error the ASR gives up on explains a later end of its stream.
          if (!msg.event.recoverable) this.lastAsrError = message;
          return this.callerTurns.onAsr({ ...msg.event, message });
        }
        return this.callerTurns.onAsr(msg.event);
      case 'asr_closed':
        if (msg.error) {
          this.d.logger.warn({ session: maskSessionId(this.config.session_id), error: msg.error }, 'asr stream closed');
          this.d.telemetry?.providerError('asr');
        }
        // The ASR ended while the call goes on (it gave up: a refused key, the vendor down past its
        // reconnects): the caller is no longer heard. Said once on the socket; typed text still works.
        if (!this.closed && !this.ending) {
          this.d.logger.warn({ session: maskSessionId(this.config.session_id) }, 'asr ended mid-call: the caller is not heard');
          const reason = msg.error ?? this.lastAsrError;
          const cause = reason ? `: ${reason}` : ' (the stream ended)';
          this.emit({ type: 'error', code: ASR_UNAVAILABLE, message: `speech recognition stopped for the rest of this call${cause}; type instead`, fatal: false });
        }
        return;
      case 'turn':
        return this.runs.onMsg(msg.runId, msg.msg);
      case 'timer':
        return this.onTimer(msg.name);
      case 'playback_done':
        if (this.phase === 'listening' && !this.runs.current) this.armIdle();
        return;
      case 'mark':
        // The caller has heard the run: a final message may now hang up; else idle counts from here.
        if (msg.name === this.heardMark) return this.endCall(this.goodbyeReason);
        if (msg.name.startsWith('run-') && this.phase === 'listening' && !this.runs.current) this.armIdle();
        return;
      case 'text_inject':
        return this.injections.onInject(msg.text, msg.role, msg.admitted === true);
      case 'client_invalid':
        this.emit({ type: 'error', code: 'INVALID_REQUEST', message: msg.message, fatal: false });
        return;
      case 'dtmf':
        // The caller's key press: an event at once; the keys of one entry (a number, a PIN) make
        // one user text the LLM (or flow) answers like speech, after a pause or at `#`.
        this.emit({ type: 'dtmf', digit: msg.digit });
        if (this.dtmfDigits.length < MAX_DTMF_DIGITS) this.dtmfDigits += msg.digit;
        if (msg.digit === '#' || this.dtmfDigits.length >= MAX_DTMF_DIGITS) return this.flushDtmf();
        this.timers.set('dtmf', DTMF_ENTRY_PAUSE_MS);
        return;
      case 'end':
        return this.endCall(msg.reason, msg.close);
      case 'transport_closed':
        return this.close('client_disconnected');
    }
  }

  // ------------------------------------------------------------------ replies

  /** Starts the agent's reply to the caller's text (from speech or injection). */
  private beginReply(asrMs: number): void {
    // The call ends once the caller heard its last words (endWhenHeard): nothing more is answered.
    if (this.heardMark) {
      this.caller.take();
      return;
    }
    // `max_turns` is a hard cap (spec): a turn past it never reaches the LLM, the call ends instead.
    // Reached here by speech (a barge-in on the last answer); injections are refused earlier.
    if (this.maxTurnsReached) {
      this.caller.take();
      this.endCall('max_turns');
      return;
    }
    // Out of credit: this turn is not answered (no LLM, no TTS spent), the notice is.
    if (this.creditSpent) {
      this.caller.take();
      return this.sayCreditNotice();
    }
    // The flow reached its end (the caller spoke over the goodbye): nothing is left to answer.
    if (this.flow?.terminal) {
      this.caller.take();
      return this.endFlow();
    }
    const { text, speechMs, confidence } = this.caller.take();
    this.turn++;
    this.emit({ type: 'transcription', text, turn: this.turn, speech_duration_ms: speechMs, asr_latency_ms: asrMs });
    this.conversation.add('user', text);
    // Spoken (not injected) text: its trace has an ASR span.
    const run = this.startRun('reply', undefined, asrMs, text);
    run.spoken = speechMs > 0;
    run.asrConfidence = confidence;
  }

  private get maxTurnsReached(): boolean {
    return this.config.max_turns > 0 && this.turn >= this.config.max_turns;
  }

  // ------------------------------------------------------------------ injected text (actor-injection.ts admits)

  /** Injected text from a sender that can be answered (`/text`): the verdict, decided now. */
  injectText(text: string, role: 'user' | 'system'): InjectVerdict {
    return this.injections.injectText(text, role);
  }

  /** Counters of accepted and refused injections (by reason) for this call. */
  get injectionCounts(): Readonly<Record<string, number>> {
    return this.injections.counts;
  }

  private injectionState(): InjectionCallState {
    const running = this.runs.current !== undefined;
    // While barge-in is off, an accepted user text waits in the caller's pending turn: bounded.
    const folds = running && !this.bargeInAllowed;
    return { closed: this.closed, running, ending: this.ending, maxTurnsReached: this.maxTurnsReached, pendingChars: folds ? this.caller.text.length : undefined };
  }

  // ------------------------------------------------------------------ barge-in

  /** Cancels the running agent turn; keeps only what the caller actually heard. False: nothing was running. */
  private interrupt(): boolean {
    const cut = this.runs.interrupt();
    if (!cut) return false;
    this.caller.setAgentSpeaking(false);
    // Nothing of a reply heard: its caller text becomes part of the caller's next turn.
    const unanswered = this.conversation.cut(cut.run, cut.heard);
    if (unanswered !== undefined) this.caller.addFinal(unanswered);
    return true;
  }

  private get bargeInAllowed(): boolean {
    return this.config.interrupt_enabled && !this.amd.finalMessage;
  }

  // ------------------------------------------------------------------ agent runs

  private startRun(kind: RunKind, speakOnly?: string, asrMs = 0, userText = ''): RunState {
    const now = this.d.clock.monotonicMs();
    const originMs = kind === 'reply' ? this.caller.speechEndMs || now : now;
    this.phase = kind === 'reply' ? 'thinking' : 'speaking';
    this.timers.cancel('idle');
    return this.runs.start(kind, this.turn, originMs, this.conversation.forModel(), speakOnly, asrMs, userText, this.flow);
  }

  // ------------------------------------------------------------------ flow

  /** Effects of a flow function of the CURRENT run (AgentRuns drops superseded runs' messages). */
  private applyFlowEffects(run: RunState, effects: FlowEffect[]): void {
    const flow = this.flow;
    if (!flow) return;
    for (const e of effects) {
      flow.apply(e);
      if (e.kind === 'enter') this.emitNodeEntered(run.turn);
    }
  }

  private emitNodeEntered(turn = this.turn): void {
    const node = this.flow!.node;
    this.emit({ type: 'flow_node_entered', node_id: node.id, label: node.label, node_type: node.type, turn });
  }

  /**
   * The flow stands in an `end` or `transfer` node and its last answer is over: the call ends, or
   * (a `transfer` node of a portal hand-off call, issue 21) a person is asked for once and the
   * call waits on the line for them.
   */
  private endFlow(): void {
    const transfer = this.flow!.node.type === 'transfer';
    if (transfer && this.config.human_handoff && this.d.requestHandoff) {
      if (!this.handoffRequested) this.d.requestHandoff();
      this.handoffRequested = true;
      return this.armIdle();
    }
    this.endCall(transfer ? 'transfer' : 'flow_end');
  }

  /** The flow's part of the conversation record: node path, collected variables, transfer target. */
  private flowRecord(): Record<string, unknown> | undefined {
    const flow = this.flow;
    if (!flow) return undefined;
    const rec: Record<string, unknown> = { node_path: [...flow.path], variables: { ...flow.variables }, current_node_id: flow.node.id };
    if (flow.node.type === 'transfer' && flow.node.transfer_to) rec.transfer_to = flow.node.transfer_to;
    return { flow: rec };
  }

  /** All audio of the run has been sent and the runner is done. */
  private finishRun(run: RunState): void {
    this.caller.setAgentSpeaking(false);
    this.phase = 'listening';
    this.callerTurns.agentDone();
    this.d.transport.mark(`run-${run.id}`);
    this.conversation.finished(run);
    if (this.amd.isFinalRun(run.id)) return this.endWhenHeard(run, this.amd.hangupReason!);
    if (run.kind === 'goodbye') return this.endWhenHeard(run, this.goodbyeReason);
    if (this.flow?.terminal) return this.endFlow();
    if (this.creditSpent) return this.sayCreditNotice();
    // The cap first: caller text still pending must not start a turn past `max_turns`.
    if (run.kind === 'reply' && this.maxTurnsReached) return this.endWhenHeard(run, 'max_turns');
    // The caller is still speaking (callerTurns.agentDone set the phase): their turn ends at its endpoint.
    if ((this.phase as Phase) === 'user_speaking') return;
    const said = this.pendingSay;
    this.pendingSay = undefined;
    if (said) return void this.startRun('nudge', said);
    // Caller text that arrived while the agent was speaking (barge-in disabled) or folded in.
    if (this.caller.text) return this.beginReply(0);
    this.armIdle();
  }

  // ------------------------------------------------------------------ idle, timers, end

  /**
   * The run's audio has left; the call ends once the caller heard it (a goodbye, the voicemail
   * message, the answer at max_turns). A carrier still plays what it buffered (closing the stream
   * now cuts the last words): its mark says when, or the grace. A browser's audio has played when
   * its run is done.
   */
  private endWhenHeard(run: RunState, reason: string): void {
    if (this.d.transport.kind === 'browser') return this.endCall(reason);
    this.ending = true;
    this.goodbyeReason = reason;
    this.heardMark = `run-${run.id}`;
    this.timers.cancel('idle');
    this.timers.set('hangup', this.t.markGraceMs + this.d.transport.leadMs);
  }

  private armIdle(): void {
    if (this.ending || this.closed) return;
    this.timers.set('idle', this.config.silence_timeout_ms);
  }

  /**
   * The keys pressed since the last entry, as one user text: admitted as an entry, not through the
   * text-injection rate limit (a person typing a number presses faster than once a second; the
   * carrier's frame budget and this grouping bound it). The turn limits and the call's end apply.
   */
  private flushDtmf(): void {
    this.timers.cancel('dtmf');
    const digits = this.dtmfDigits;
    this.dtmfDigits = '';
    if (digits) this.injections.onInject(dtmfText(digits), 'user', true);
  }

  private onTimer(name: CallTimerName): void {
    this.timers.fired(name);
    if (name === 'dtmf') return this.flushDtmf();
    if (name === 'barge_confirm') this.callerTurns.onBargeTimeout();
    else if (name === 'endpoint') this.callerTurns.onEndpointTimeout();
    else if (name === 'hangup') {
      this.endCall(this.goodbyeReason);
    } else if (name === 'credit') {
      this.creditSpent = true;
      // Nothing in progress is itself a turn boundary; otherwise the run or turn under way ends first.
      if (this.phase === 'listening' && !this.runs.current) this.sayCreditNotice();
    } else if (name === 'idle' && this.phase === 'listening' && !this.runs.current) {
      const step = this.idle.next();
      if (step.kind === 'goodbye') this.ending = true;
      this.emit(step.event);
      this.startRun(step.kind, step.text);
      if (step.kind === 'goodbye') this.timers.set('hangup', this.t.hangupGraceMs);
    }
  }

  /** The credit notice as the call's goodbye (once): the failure frame, the notice, then the end. */
  private sayCreditNotice(): void {
    if (this.ending || this.closed) return;
    this.ending = true;
    this.goodbyeReason = INSUFFICIENT_BALANCE;
    this.emit(CREDIT_EXHAUSTED_EVENT);
    this.startRun('goodbye', CREDIT_NOTICE_TEXT).notice = 'credit_exhausted';
    this.timers.set('hangup', this.t.hangupGraceMs);
  }

  /**
   * The node's drain deadline passed (issue 23, docs/operations.md): cut what is playing, say
   * `text`, then end with `reason`, at the latest after the hangup grace. A call already saying
   * its goodbye keeps it (it ends within the same grace).
   */
  shutdown(text: string, reason: string): void {
    if (this.closed || this.ending) return;
    if (this.runs.current) this.interrupt();
    this.ending = true;
    this.goodbyeReason = reason;
    this.timers.cancel('idle');
    this.startRun('goodbye', text).notice = 'shutdown';
    this.timers.set('hangup', this.t.hangupGraceMs);
  }

  /** Says `text` now, cutting what is playing (the hand-off fallback, issue 21). False: the call is ending. */
  say(text: string): boolean {
    if (this.closed || this.ending) return false;
    // A run the caller is already hearing ("please stay on the line") ends first: cut, it left
    // half a sentence before the words. One still silent (the model thinking) gives way at once.
    if (this.runs.current?.audioStarted) {
      this.pendingSay = text;
      return true;
    }
    if (this.runs.current) this.interrupt();
    this.startRun('nudge', text);
    return true;
  }

  /** Ends the call on purpose: `call_ended`, then the socket closes. */
  endCall(reason: string, socketClose?: { code: number; text: string }): void {
    if (this.closed) return;
    // A reply still running is over now: its `turn_complete` comes before `call_ended`, the last event.
    this.abandonRun();
    this.emit({ type: 'call_ended', reason });
    this.close(reason, socketClose);
  }

  /**
   * The call ends: the running run (if any) is completed with what was heard, then the caller's
   * words no turn took (they hung up mid-sentence, before the ASR's final) become a last turn
   * with no answer, so the record keeps them.
   */
  private abandonRun(): void {
    const cut = this.runs.abandon();
    if (cut) {
      if (cut.run.kind === 'reply') {
        cut.run.interrupted = true;
        this.conversation.complete(cut.run, cut.heard);
      } else this.conversation.cut(cut.run, cut.heard);
    }
    this.recordUnfinishedWords();
  }

  private recordUnfinishedWords(): void {
    // A voicemail greeting held by AMD is not a caller; past `max_turns` no turn is counted.
    if (this.amd.holding || this.maxTurnsReached) return;
    const { text, speechMs } = this.caller.takeUnfinished();
    if (!text) return;
    this.turn++;
    this.emit({ type: 'transcription', text, turn: this.turn, speech_duration_ms: speechMs, asr_latency_ms: 0 });
    const now = this.d.clock.monotonicMs();
    const run = new RunState(-1, 'reply', this.turn, this.caller.speechEndMs || now, 0, text, this.d.clock.now());
    run.spoken = true;
    run.unanswered = true;
    this.conversation.complete(run, '');
  }

  private fail(message: string): void {
    if (this.closed) return;
    this.emit({ type: 'error', message, fatal: true });
    this.endCall('error');
  }

  /** Idempotent teardown: cancels work, closes ASR, writes the call end, closes the socket. */
  close(reason: string, socketClose = { code: 1000, text: reason }): void {
    if (this.closed) return;
    this.abandonRun();
    this.closed = true;
    this.timers.cancelAll();
    this.asr?.close();
    if (this.injections.anyRefused || this.conversation.droppedMessages > 0) {
      this.d.logger.info({ session: maskSessionId(this.config.session_id), injections: this.injections.counts, historyDroppedMessages: this.conversation.droppedMessages }, 'call bounds applied');
    }
    this.conversation.end(reason, this.flowRecord());
    this.d.telemetry?.end(reason);
    this.d.transport.close(socketClose.code, socketClose.text);
    this.d.onClosed?.(reason);
  }

  private emitForRun(ev: ServerEvent): void {
    // Retry callbacks fire inside the runner's async work; route them through the mailbox order.
    if (!this.closed) this.emit(ev);
  }

  private emit(ev: ServerEvent): void {
    this.d.transport.sendEvent(ev);
  }
}

/** What the LLM and flows see of a key press, or of the keys of one entry. */
export function dtmfText(digits: string): string {
  return `[caller pressed ${digits}]`;
}

/** Keys pressed with no longer pause than this between them are one entry. */
export const DTMF_ENTRY_PAUSE_MS = 1200;
/** Keys of one entry kept (a phone number with its country code fits); later ones are dropped. */
export const MAX_DTMF_DIGITS = 32;
