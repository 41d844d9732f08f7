/**
 * What a call leaves behind: the LLM history (bounded, `history.ts`) and the durable record (call
 * start, one turn record per reply, the agent's own prompts (welcome, nudges, goodbyes), call
 * end; `turn-accounting.ts`). Only what the caller heard of
 * an answer goes into either; the turn is then marked interrupted.
 */
import type { ServerEvent } from '../../shared/protocol/voice-socket.js';
import type { LlmMessage } from '../../shared/providers/types.js';
import type { CallActorDeps } from './actor-deps.js';
import { CallHistory } from './history.js';
import type { CallLimits } from './limits.js';
import type { RunState } from './run-state.js';
import { TurnAccounting, turnObservation, turnRecord } from './turn-accounting.js';

export class Conversation {
  private readonly history: CallHistory;
  private readonly turns: TurnAccounting;

  constructor(
    private readonly d: CallActorDeps,
    limits: CallLimits,
    private readonly startedAtMs: number,
    private readonly emit: (ev: ServerEvent) => void,
    /** The caller's audio of the turn, for the record (taken only when there is a recorder). */
    private readonly takeCallerAudio: () => Int16Array | undefined,
    /** The reply's audio as sent to the caller, likewise. */
    private readonly takeAgentAudio: () => { samples: Int16Array; sampleRateHz: number } | undefined,
  ) {
    this.history = new CallHistory({ tokenBudget: limits.historyTokenBudget, maxMessages: limits.historyMaxMessages });
    this.turns = new TurnAccounting(startedAtMs);
  }

  /** Messages dropped from the history to stay within its bounds (for the end-of-call log). */
  get droppedMessages(): number {
    return this.history.droppedMessages;
  }

  forModel(): LlmMessage[] {
    return this.history.forModel();
  }

  /** The call starts: the system prompt opens the history, the record gets its call row. */
  start(): void {
    const c = this.d.config;
    this.history.push({ role: 'system', content: c.system_prompt });
    this.d.recorder?.start({
      session_id: c.session_id,
      agent_id: c.agent_id,
      user_id: c.user_id,
      workspace_id: c.workspace_id,
      call_id: c.call_id,
      // `connection_type` names the media stream's protocol (the carrier's name for carrier calls); `telephony_provider` the carrier itself.
      metadata: { ...c.session_metadata, call_direction: c.call_direction, connection_type: c.connection_type, ...(c.telephony_provider ? { telephony_provider: c.telephony_provider } : {}), agent_version: c.agent_version },
      started_at_ms: this.startedAtMs,
    });
  }

  /** The caller's turn (spoken or injected), or an injected system note. */
  add(role: 'user' | 'system', text: string): void {
    this.history.push({ role, content: text });
  }

  /** A run played to the end: a reply's messages (tool calls included) and its turn record. */
  finished(run: RunState): void {
    if (run.kind === 'reply') {
      this.history.push(...run.appended);
      this.complete(run, run.assistantText);
    } else if (run.assistantText) {
      this.history.push({ role: 'assistant', content: run.assistantText });
      this.agentMessage(run, run.assistantText, false);
    }
  }

  /** The welcome, a nudge or a goodbye as an agent message of the record (what was heard of it). */
  private agentMessage(run: RunState, text: string, interrupted: boolean): void {
    if (run.kind === 'reply' || !text) return;
    const audio = this.takeAgentAudio();
    this.d.recorder?.agentMessage?.({
      kind: run.kind,
      turn: run.turn,
      text,
      interrupted,
      ...(run.notice ? { notice: run.notice } : {}),
      tts: { provider: this.d.providers.tts.label, model: this.d.config.providers.tts.model_name },
      started_at_ms: run.startedAtMs,
      ...(audio ? { agent_audio: audio } : {}),
    });
  }

  /**
   * A run was cut after the caller heard `heard` of it. Returns the unanswered caller text when
   * nothing of a reply was heard and it called no tool: it is folded into the next turn instead
   * of leaving two user messages in a row (some models refuse that) or a reply nobody heard.
   */
  cut(run: RunState, heard: string): string | undefined {
    if (run.kind !== 'reply') {
      if (heard) this.history.push({ role: 'assistant', content: heard });
      this.agentMessage(run, heard, true);
      return undefined;
    }
    // Tools the reply already called stay, results and all: asking again would run them again.
    const tools = run.cutToolExchange(this.d.config.session_id, this.d.clock.monotonicMs());
    let unanswered: string | undefined;
    const last = this.history.last;
    if (!heard && tools.length === 0 && last?.role === 'user') {
      this.history.pop();
      unanswered = last.content;
    }
    this.history.push(...tools);
    if (heard) this.history.push({ role: 'assistant', content: heard });
    this.complete(run, heard);
    return unanswered;
  }

  /** A reply is over (played, cut, or cut by the end of the call): `turn_complete` and its record. */
  complete(run: RunState, assistantText: string): void {
    const timing = this.turns.count(run);
    // The caller's unanswered last words are no agent reply: not in the reply metrics and traces.
    if (!run.unanswered) this.d.telemetry?.turn(turnObservation(run, timing, this.d.clock.monotonicMs()));
    this.emit({ type: 'turn_complete', turn: run.turn, user_text: run.userText, assistant_text: assistantText, timing });
    this.d.recorder?.turn(turnRecord(this.d, run, assistantText, timing, this.takeCallerAudio(), run.unanswered ? undefined : this.takeAgentAudio()));
  }

  /** `metadata`: merged into the conversation's metadata (flow mode: node path and variables). */
  end(reason: string, metadata?: Record<string, unknown>): void {
    const rec = this.turns.endRecord(reason, this.d.clock.now());
    this.d.recorder?.end(metadata ? { ...rec, metadata } : rec);
  }
}
