/**
 * Injected text on one call (`text_inject` frames, and `/text` through the node's command
 * channel): admission on arrival (`injection.ts`: length, ending, max_turns, pending queue, rate
 * limit), the refusal the client sees (a non-fatal `error` event, logged once per reason), and the
 * second check when an already admitted text reaches the mailbox, and what an accepted text does:
 * a system text is a note in the history; a user text behaves as if the caller had said it.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { CallActorDeps } from './actor-deps.js';
import { InjectionGate, type InjectContext, type InjectRefusalReason, type InjectVerdict } from './injection.js';
import type { CallLimits } from './limits.js';
import type { CallMsg } from './messages.js';
import { maskSessionId } from '../../shared/ids.js';

/** The call as an injection finds it. */
export interface InjectionCallState extends InjectContext {
  closed: boolean;
  /** An agent run is in progress (something is, or is about to be, playing). */
  running: boolean;
}

export interface InjectionHost {
  state(): InjectionCallState;
  /** Barge-in is allowed now (config, and no final message playing). */
  bargeInAllowed(): boolean;
  emit(ev: ServerEvent): void;
  post(msg: CallMsg): void;
  endCall(reason: string): void;
  addSystemNote(text: string): void;
  /** Adds to the caller's pending turn (answered when the current answer ends). */
  foldIntoCallerTurn(text: string): void;
  /** Cancels the running answer, keeping what was heard (a barge-in). */
  interrupt(): void;
  /** Answers `text` now as the caller's next turn. */
  reply(text: string): void;
}

type RefusalCode = Exclude<InjectVerdict, { ok: true }>['code'];

export class CallInjections {
  private readonly gate: InjectionGate;
  /** Refusal reasons already logged for this call (one warning each, counts at the end). */
  private readonly loggedRefusals = new Set<string>();

  constructor(
    private readonly d: CallActorDeps,
    limits: CallLimits,
    private readonly host: InjectionHost,
  ) {
    this.gate = new InjectionGate(d.clock, limits);
  }

  /** Accepted and refused injections of this call, by reason. */
  get counts(): Readonly<Record<string, number>> {
    return this.gate.counts;
  }

  get anyRefused(): boolean {
    return this.gate.anyRefused;
  }

  /**
   * From a sender that can be answered (the node's `/text` command reply: 429, 409 or 400 from the
   * verdict's code). Admission is decided now; an accepted text is queued in the mailbox.
   */
  injectText(text: string, role: 'user' | 'system'): InjectVerdict {
    const call = this.host.state();
    if (call.closed) return { ok: false, code: 'CONFLICT', reason: 'call_ending', message: 'the call has ended' };
    const verdict = this.admit(text, role, call);
    if (verdict.ok) this.host.post({ kind: 'text_inject', text, role, admitted: true });
    return verdict;
  }

  /**
   * A `text_inject` message. `admitted`: `injectText()` already charged the rate limit; only the
   * call's state is checked again (turns queued ahead of it may have reached the cap meanwhile).
   */
  onInject(text: string, role: 'user' | 'system', admitted: boolean): void {
    const call = this.host.state();
    if (!admitted) {
      if (!this.admit(text, role, call).ok) return;
    } else if (call.ending || (role === 'user' && call.maxTurnsReached)) {
      const reason = call.ending ? 'call_ending' : 'max_turns';
      this.gate.recountRefused(reason);
      this.refuse(reason, 'CONFLICT', call.ending ? 'the call is ending' : 'max_turns reached', call);
      return;
    }
    this.accept(text, role);
  }

  /**
   * A user text interrupts a running answer when barge-in is allowed; otherwise it waits, folded
   * into the caller's next turn (the bounded queue: at most INJECT_TEXT_MAX_CHARS characters
   * pending, beyond that refused on arrival as `pending_full`).
   */
  private accept(text: string, role: 'user' | 'system'): void {
    const host = this.host;
    if (role === 'system') return host.addSystemNote(text);
    const running = host.state().running;
    if (running && !host.bargeInAllowed()) return host.foldIntoCallerTurn(text);
    if (running) host.interrupt();
    host.reply(text);
  }

  private admit(text: string, role: 'user' | 'system', call: InjectionCallState): InjectVerdict {
    const verdict = this.gate.admit(text, role, call);
    if (!verdict.ok) this.refuse(verdict.reason, verdict.code, verdict.message, call);
    return verdict;
  }

  /** Tells the client (non-fatal `error` event), logs the first refusal of each kind per call. */
  private refuse(reason: InjectRefusalReason, code: RefusalCode, message: string, call: InjectionCallState): void {
    this.host.emit({ type: 'error', code, message, fatal: false });
    if (!this.loggedRefusals.has(reason)) {
      this.loggedRefusals.add(reason);
      this.d.logger.warn({ session: maskSessionId(this.d.config.session_id), reason }, 'injected text refused');
    }
    // At the cap with no answer left to play, nothing else can end the call: end it now.
    if (reason === 'max_turns' && !call.running && !call.closed) this.host.endCall('max_turns');
  }
}
