/**
 * The caller's side of turn-taking: speech onset (VAD, or ASR text the VAD missed), endpointing
 * (ASR end-of-turn, or silence after final text; with no text the ASR is forced to finalize and
 * given 1.5 s), and barge-in (onset while the agent answers opens a window; a transcript that is
 * real speech confirms it, else the window closes with `phase_idle`). The call's phase is the
 * actor's (`CallerTurnHost.phase()`); what a confirmed barge-in or a finished turn does is too.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { AsrEvent } from '../../shared/providers/types.js';
import type { ActorTuning, CallActorDeps, Phase } from './actor-deps.js';
import { isBackchannel, isLikelyEcho, mayBecomeBackchannel } from './backchannel.js';
import type { CallTimers } from './call-timers.js';
import type { CallerSpeech } from './caller-speech.js';
import { maskSessionId } from '../../shared/ids.js';

/** With no final text at the silence endpoint, the ASR gets this long to finalize. */
const FINALIZE_WAIT_MS = 1500;
/**
 * With an ASR that gives no interim text (transcription per utterance: OpenAI, Groq, Whisper
 * servers), a barge-in cannot wait for words: this much continuous speech confirms it (longer
 * than a backchannel's "mm-hmm"; LiveKit's default minimum is 500 ms).
 */
export const VAD_BARGE_CONFIRM_MS = 700;
/**
 * With a streaming ASR, words confirm a barge-in; speech it cannot read (an accent, a line too
 * noisy, a voice the `sim` ASR does not decode) gives none. This much continuous speech confirms
 * it anyway, unless the ASR heard a backchannel in it (our own echo on speakers stays in short
 * segments under the raised threshold: docs, the VAD tests).
 */
export const VAD_ONLY_BARGE_CONFIRM_MS = 1500;

export interface CallerTurnHost {
  /** The call's turn state: the actor's, read and set through these. */
  phase(): Phase;
  setPhase(phase: Phase): void;
  bargeInAllowed(): boolean;
  /** What the agent is saying right now (the echo check on speakers). */
  agentText(): string;
  emit(ev: ServerEvent): void;
  /** The caller started speaking: idle nudges start over. */
  onCallerSpeech(): void;
  /** Forces the ASR to finalize what it has. */
  flushAsr(): void;
  /** Barge-in confirmed: cancel the running answer, keep what was heard. */
  interrupt(): void;
  /** The caller's turn is over with text: answer it. */
  beginReply(asrMs: number): void;
  /** The caller's turn ended without text: listening again. */
  armIdle(): void;
}

/** Speech the VAD heard that the sim ASR could not read, on the socket (`error.code`). */
export const SPEECH_NOT_UNDERSTOOD = 'speech_not_understood';
export const SIM_ASR_HINT = 'sim ASR understands only sim-coded audio; configure a speech provider or type';
const MIN_UNDERSTOOD_SPEECH_MS = 400;

export class CallerTurns {
  /** VAD onset while the agent answers, not yet confirmed by a transcript. */
  private bargeCandidate = false;
  /** The open candidate's text so far was a backchannel or our echo: its length confirms nothing. */
  private heardBackchannel = false;
  /** Utterances the sim ASR could not read on this call (the log line is written for the first). */
  private notUnderstood = 0;

  constructor(
    private readonly d: Pick<CallActorDeps, 'clock' | 'profile' | 'logger' | 'config' | 'providers'>,
    private readonly t: ActorTuning,
    private readonly caller: CallerSpeech,
    private readonly timers: CallTimers,
    private readonly host: CallerTurnHost,
  ) {}

  /** One 20 ms frame of caller audio at the call's inbound rate (already pushed to the ASR). */
  frame(pcm: Int16Array): void {
    const v = this.caller.frame(pcm);
    if (v.onset) this.onSpeechOnset();
    if (this.bargeCandidate && v.speech && !this.heardBackchannel && this.host.bargeInAllowed()) {
      const needMs = this.d.providers.asr.capabilities.interim ? VAD_ONLY_BARGE_CONFIRM_MS : VAD_BARGE_CONFIRM_MS;
      if (v.speechMs >= needMs) {
        // Confirmed by the voice alone (no words yet): clients cut playback on
        // `interim_transcription` (spec), so they get one, with no text, or they play on; first,
        // before the interrupted reply's `turn_complete`, as a transcript would come.
        this.host.emit({ type: 'interim_transcription', text: '' });
        this.confirmBargeIn();
      }
    }
    if (this.host.phase() === 'user_speaking' && !v.speech && v.silenceMs >= this.t.endpointSilenceMs && !this.timers.has('endpoint')) {
      // Silence long enough: close the turn with what ASR has, after forcing it to finalize.
      if (this.caller.text) this.endUserTurn();
      else {
        this.host.flushAsr();
        this.timers.set('endpoint', FINALIZE_WAIT_MS);
      }
    }
  }

  onAsr(ev: AsrEvent): void {
    const host = this.host;
    if (ev.type === 'interim' || ev.type === 'final') {
      const text = ev.text.trim();
      if (!text) return;
      let interimSent = false;
      if (host.phase() === 'speaking' || host.phase() === 'thinking') {
        if (!host.bargeInAllowed()) return;
        // A backchannel (or what may still become one) never confirms a barge-in; on speakers,
        // neither does text that is our own voice coming back.
        if (ev.type === 'interim' ? mayBecomeBackchannel(text) : isBackchannel(text)) {
          this.heardBackchannel = true;
          return;
        }
        if (this.d.profile === 'browser_speakers' && isLikelyEcho(text, host.agentText())) {
          this.heardBackchannel = true;
          return;
        }
        if (!this.bargeCandidate) host.emit({ type: 'user_started_speaking' });
        // The transcript that confirms the barge-in goes out before the interrupted reply's
        // `turn_complete`: spec clients cut playback on `interim_transcription`.
        // A final confirms it too (an ASR without interims): clients get its words the same way.
        host.emit({ type: 'interim_transcription', text });
        interimSent = true;
        this.confirmBargeIn();
      } else if (host.phase() === 'listening') {
        // ASR heard speech VAD missed (quiet caller): treat as onset.
        this.onSpeechOnset();
      }
      if (ev.type === 'interim') {
        this.caller.setInterim(text);
        if (!interimSent) host.emit({ type: 'interim_transcription', text });
      } else {
        this.caller.addFinal(text, true, ev.confidence);
        // The vendor's end of turn, or the answer to our finalize request at the silence endpoint
        // (the turn was already over: waiting out FINALIZE_WAIT_MS only added latency).
        if (host.phase() === 'user_speaking' && (ev.endOfTurn || this.timers.has('endpoint'))) this.endUserTurn();
      }
      return;
    }
    if (ev.type === 'utterance_end' && host.phase() === 'user_speaking' && this.caller.text) this.endUserTurn();
    if (ev.type === 'error') this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), error: ev.message, recoverable: ev.recoverable }, 'asr error');
  }

  /** The barge-in window closed without a confirming transcript. */
  onBargeTimeout(): void {
    if (!this.bargeCandidate) return;
    this.bargeCandidate = false;
    this.host.emit({ type: 'phase_idle' });
  }

  /** The ASR had its time to finalize after the silence endpoint. */
  onEndpointTimeout(): void {
    if (this.host.phase() === 'user_speaking') this.endUserTurn();
  }

  /**
   * The agent's run finished (the phase is `listening` again). A caller still speaking is taking
   * their turn now: without this, speech that began over the end of the answer (the onset already
   * passed) was never a turn and the caller was then nudged as silent. On speakers only an open
   * barge-in window counts (the echo tail of our own voice must not start a turn).
   */
  agentDone(): void {
    const candidate = this.bargeCandidate;
    this.bargeCandidate = false;
    this.timers.cancel('barge_confirm');
    if (!this.caller.inSpeech || this.host.phase() !== 'listening') return;
    if (!candidate && this.d.profile === 'browser_speakers') return;
    this.host.onCallerSpeech();
    this.host.setPhase('user_speaking');
    this.caller.startTurn();
    if (!candidate) this.host.emit({ type: 'user_started_speaking' });
  }

  private onSpeechOnset(): void {
    const host = this.host;
    host.onCallerSpeech();
    if (host.phase() === 'listening') {
      host.setPhase('user_speaking');
      this.caller.startTurn();
      host.emit({ type: 'user_started_speaking' });
      return;
    }
    if ((host.phase() === 'speaking' || host.phase() === 'thinking') && host.bargeInAllowed() && !this.bargeCandidate) {
      this.bargeCandidate = true;
      this.heardBackchannel = false;
      host.emit({ type: 'user_started_speaking' });
      this.timers.set('barge_confirm', this.t.bargeConfirmMs);
    }
  }

  private confirmBargeIn(): void {
    this.timers.cancel('barge_confirm');
    this.bargeCandidate = false;
    this.host.interrupt();
    this.host.setPhase('user_speaking');
    this.caller.startTurn();
  }

  /**
   * The VAD heard an utterance and the ASR returned no text. With `sim` that is certain to happen
   * for a real voice (it decodes only the sim audio code): say so, as a non-fatal `error` event the
   * console shows and one log line per call, instead of a silent agent. Short blips (< 400 ms of
   * speech) are noise, not a caller, and real ASRs may rightly return nothing: no event then.
   */
  private speechNotUnderstood(speechMs: number): void {
    if (this.d.providers.asr.label !== 'sim' || speechMs < MIN_UNDERSTOOD_SPEECH_MS) return;
    this.notUnderstood++;
    this.host.emit({ type: 'error', code: SPEECH_NOT_UNDERSTOOD, message: SIM_ASR_HINT, fatal: false });
    if (this.notUnderstood === 1) this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), speechMs }, SIM_ASR_HINT);
  }

  private endUserTurn(): void {
    this.timers.cancel('endpoint');
    if (!this.caller.text.trim()) {
      const { speechMs } = this.caller.take();
      this.speechNotUnderstood(speechMs);
      this.host.setPhase('listening');
      this.host.emit({ type: 'phase_idle' });
      this.host.armIdle();
      return;
    }
    const speechEnd = this.caller.speechEndMs;
    const asrMs = speechEnd ? Math.max(0, Math.round(this.d.clock.monotonicMs() - speechEnd)) : 0;
    this.host.beginReply(asrMs);
  }
}
