/**
 * One simulated conversation, in text mode (or audio mode: speech.ts): the agent side is the engine's turn runner
 * (shared/agent/turn-runner.ts: LLM steps, tools in parallel, at most 5 steps per turn) over the
 * engine's bounded history (shared/agent/history.ts), started from the same session config a call
 * gets (system prompt, welcome message, tools, `max_turns`); no audio, so it runs as fast as the
 * models and tools answer. The caller side is `nextCallerTurn` (caller.ts).
 *
 * It stops when the caller reports its goal reached, when the caller hangs up (`end_call`), or
 * after `max_turns` caller turns (the case's, capped by the agent's own). An agent LLM failure
 * (the engine speaks what it had and ends the turn; here: no retry, as on a call) or a caller LLM
 * failure throws `ProviderFailure`: the case is `errored`.
 */
import type { Clock } from '../../shared/clock.js';
import type { LlmProvider } from '../../shared/providers/types.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import { CallHistory } from '../../shared/agent/history.js';
import { runTurn, TOO_MANY_TOOL_STEPS, type AgentTool, type TurnMsg } from '../../shared/agent/turn-runner.js';
import { withTtsRetry } from '../../shared/providers/retry.js';
import { nextCallerTurn } from './caller.js';
import { ProviderFailure } from './forced-call.js';
import { Listener, speakAndHear, TTS_RATE_HZ, type SpeechPath } from './speech.js';
import type { TranscriptEntryJson } from './store.js';

/** The engine's history defaults (media-engine/session/limits.ts), unless the config overrides them. */
const HISTORY_TOKEN_BUDGET = 8000;
const HISTORY_MAX_MESSAGES = 200;
/** Tool results shown in the transcript are cut to this. */
const MAX_TOOL_TEXT_CHARS = 500;
/** An agent answer stored in the transcript is cut to this (the history keeps it whole). */
const MAX_AGENT_TEXT_CHARS = 4000;

export interface ConversationInput {
  config: SessionConfig;
  testCase: { persona: string; goal: string; max_turns: number };
  agentLlm: LlmProvider;
  callerLlm: LlmProvider;
  tools: AgentTool[];
  clock: Clock;
  /** Per caller request, and per line's speech recognition in audio mode. */
  callerTimeoutMs: number;
  /** Audio mode: every line also goes through this TTS and ASR (speech.ts). Absent: text mode. */
  speech?: SpeechPath;
  signal: AbortSignal;
}

export interface ConversationOutcome {
  transcript: TranscriptEntryJson[];
  turns: number;
  tokens: number;
  retries: number;
  endedBy: 'goal_reached' | 'caller_hung_up' | 'max_turns';
}

export async function simulateConversation(input: ConversationInput): Promise<ConversationOutcome> {
  const { config, clock, signal } = input;
  const history = new CallHistory({
    tokenBudget: config.call_limits?.history_token_budget ?? HISTORY_TOKEN_BUDGET,
    maxMessages: config.call_limits?.history_max_messages ?? HISTORY_MAX_MESSAGES,
  });
  history.push({ role: 'system', content: config.system_prompt });
  const transcript: TranscriptEntryJson[] = [];
  if (config.welcome_message) {
    history.push({ role: 'assistant', content: config.welcome_message });
    transcript.push({ role: 'agent', content: config.welcome_message, turn: 0 });
  }
  const maxTurns = Math.min(input.testCase.max_turns, config.max_turns > 0 ? config.max_turns : Infinity);
  let tokens = 0;
  let retries = 0;
  for (let turn = 1; turn <= maxTurns; turn++) {
    const caller = await nextCallerTurn(input.callerLlm, input.testCase, transcript, { clock, timeoutMs: input.callerTimeoutMs, signal });
    tokens += caller.tokens;
    retries += caller.retries;
    if (!caller.say) return { transcript, turns: turn - 1, tokens, retries, endedBy: caller.goalReached ? 'goal_reached' : 'caller_hung_up' };
    // Audio mode: the agent gets what its ASR made of the caller's spoken line.
    const heard = input.speech ? await speakAndHear(input.speech, caller.say, { clock, timeoutMs: input.callerTimeoutMs, signal }) : undefined;
    transcript.push({ role: 'caller', content: caller.say, turn, ...(heard !== undefined ? { heard } : {}) });
    history.push({ role: 'user', content: heard ?? caller.say });
    const reply = await agentTurn(input, history.forModel(), turn, transcript);
    tokens += reply.tokens;
    history.push(...reply.appended);
    if (reply.text) transcript.push({ role: 'agent', content: reply.text.slice(0, MAX_AGENT_TEXT_CHARS), turn, ...(reply.heard !== undefined ? { heard: reply.heard } : {}) });
    if (caller.endCall) return { transcript, turns: turn, tokens, retries, endedBy: 'caller_hung_up' };
    if (caller.goalReached) return { transcript, turns: turn, tokens, retries, endedBy: 'goal_reached' };
  }
  return { transcript, turns: maxTurns, tokens, retries, endedBy: 'max_turns' };
}

/** One agent reply through the turn runner (no TTS in text mode); tool calls go into the transcript. */
async function agentTurn(input: ConversationInput, messages: ReturnType<CallHistory['forModel']>, turn: number, transcript: TranscriptEntryJson[]) {
  let tokens = 0;
  let llmError: string | undefined;
  let done: Extract<TurnMsg, { kind: 'run_done' }> | undefined;
  const speech = input.speech;
  // Audio mode: the answer is synthesised piece by piece as on a call, and the caller's ASR hears it.
  const listener = speech ? new Listener(speech, 'caller', { clock: input.clock, timeoutMs: input.callerTimeoutMs }) : undefined;
  let ttsFailed = false;
  const tts = speech ? withTtsRetry(speech.tts, { clock: input.clock, onExhausted: () => (ttsFailed = true) }) : undefined;
  try {
    await runTurn({
      messages,
      tools: input.tools,
      llm: input.agentLlm,
      tts,
      ttsVoice: speech?.ttsVoice,
      ttsModel: speech?.ttsModel,
      language: input.config.language,
      ttsSampleRateHz: TTS_RATE_HZ,
      signal: input.signal,
      now: () => input.clock.monotonicMs(),
      post: (m) => {
        if (m.kind === 'tts_audio') listener?.push(m.chunk);
        else if (m.kind === 'llm_step_done') tokens += m.inputTokens + m.outputTokens;
        // The agent's model looping on tools is the agent's behaviour, judged like any answer (an
        // empty one), not a provider failure that would discard the transcript.
        else if (m.kind === 'llm_error' && m.code !== TOO_MANY_TOOL_STEPS) llmError = m.message;
        else if (m.kind === 'tool_result') {
          const text = `${m.call.name}(${m.call.arguments}) -> ${m.result.status === 'success' ? m.result.content : `error: ${m.result.error ?? m.result.content}`}`;
          transcript.push({ role: 'tool', content: text.slice(0, MAX_TOOL_TEXT_CHARS), turn });
        } else if (m.kind === 'run_done') done = m;
      },
    });
  } catch (err) {
    listener?.close();
    throw err;
  }
  if (input.signal.aborted || llmError !== undefined || ttsFailed) {
    listener?.close();
    if (input.signal.aborted) throw input.signal.reason as Error;
    throw new ProviderFailure('agent', llmError ?? 'TTS failed after retries');
  }
  const heard = listener ? await listener.text() : undefined;
  return { appended: done?.appended ?? [], text: (done?.assistantText ?? '').trim(), tokens, heard };
}
