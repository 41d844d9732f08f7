/**
 * The actor's side of answering-machine detection: the policy state (`amd.ts` decides, the actor
 * carries out the effects) and the final message after which the call hangs up (the voicemail).
 * While a final message plays there is no barge-in, and the call ends once it has been heard.
 */
import { maskSessionId } from '../../shared/ids.js';
import type { Logger } from '../../shared/logger.js';
import { amdStart, amdStep, type AmdEffect, type AmdInput, type AmdState } from './amd.js';
import type { AmdSettings } from '../../shared/voice/amd.js';

/** How the policy's effects act on the call. */
export interface AmdHost {
  greet(): void;
  armVerdictTimeout(ms: number): void;
  cancelVerdictTimeout(): void;
  endCall(reason: string): void;
  /** Cuts whatever plays, marks the call ending and speaks `text`; returns the run's id. */
  speakFinal(text: string): number;
}

export class AmdControl {
  private state?: AmdState;
  /** A run after which the call hangs up, and the carrier mark whose echo says it was heard. */
  private hangupAfter?: { runId: number; reason: string };

  constructor(
    readonly settings: AmdSettings | undefined,
    private readonly logger: Logger,
    private readonly sessionId: string,
  ) {}

  /** Verdict current for this call (`undefined` while waiting or without detection). */
  get verdict(): AmdState['verdict'] {
    return this.state?.verdict;
  }

  /** leave_voicemail holds the greeting and caller turns until the verdict. */
  get holding(): boolean {
    return this.state?.holding === true;
  }

  /** At call start. False without detection (the actor greets as usual). */
  start(host: AmdHost): boolean {
    if (!this.settings) return false;
    const r = amdStart(this.settings);
    this.state = r.state;
    this.apply(r.effects, host);
    return true;
  }

  /** A verdict or the timeout; nothing happens without detection or once decided. */
  onInput(input: AmdInput, host: AmdHost): void {
    if (!this.settings || !this.state) return;
    const r = amdStep(this.settings, this.state, input);
    if (r.state === this.state) return;
    this.state = r.state;
    host.cancelVerdictTimeout();
    this.logger.info({ session: maskSessionId(this.sessionId), verdict: r.state.verdict, treatedAs: r.state.treatedAs, policy: this.settings.policy }, 'amd verdict');
    this.apply(r.effects, host);
  }

  private apply(effects: AmdEffect[], host: AmdHost): void {
    for (const e of effects) {
      if (e.kind === 'greet') host.greet();
      else if (e.kind === 'arm_timeout') host.armVerdictTimeout(e.ms);
      else if (e.kind === 'hangup') host.endCall(e.reason);
      else if (e.kind === 'speak_then_hangup') this.hangupAfter = { runId: host.speakFinal(e.text), reason: e.reason };
    }
  }

  /** A final message is playing (or played): the call ends after it. */
  get finalMessage(): boolean {
    return this.hangupAfter !== undefined;
  }

  /** Why the call ends after the final message (`undefined` when there is none). */
  get hangupReason(): string | undefined {
    return this.hangupAfter?.reason;
  }

  isFinalRun(runId: number): boolean {
    return this.hangupAfter?.runId === runId;
  }

}
