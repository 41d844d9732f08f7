/**
 * The simulated caller: an LLM playing the test case's persona with its goal, one line per turn,
 * as a forced `simulated_caller_turn` call (`say`, `goal_reached`, `end_call`). Its prompt is its
 * own (not the agent's): the persona, the goal and the conversation so far, written from the
 * caller's side. An answer that breaks the format is asked again once, then the case is errored.
 */
import type { Clock } from '../../shared/clock.js';
import type { LlmProvider, LlmToolSpec } from '../../shared/providers/types.js';
import { SIM_CALLER_TOOL } from '../../shared/providers/llm/sim-simtest.js';
import { forcedCall, ProviderFailure } from './forced-call.js';
import type { TranscriptEntryJson } from './store.js';

export const CALLER_PROMPT =
  'You are a simulated phone caller testing an AI voice agent. Stay in the persona you are given and pursue your goal, ' +
  'one short spoken line per turn, as a real caller would. Never play the agent. ' +
  `Answer only by calling ${SIM_CALLER_TOOL}: \`say\` is your next line; set \`goal_reached\` once the agent has done what your goal needs ` +
  '(then `say` may be empty), and `end_call` when you would hang up.';

/** A caller line longer than this is cut (a spoken line, not an essay). */
const MAX_LINE_CHARS = 1000;
/** Transcript characters shown to the caller (the end is kept). */
const MAX_TRANSCRIPT_CHARS = 20_000;

export const CALLER_TOOL: LlmToolSpec = {
  name: SIM_CALLER_TOOL,
  description: 'Your next turn as the caller.',
  parameters: {
    type: 'object',
    properties: {
      say: { type: 'string', description: 'What you say next (may be empty when goal_reached or end_call).' },
      goal_reached: { type: 'boolean', description: 'The agent has done what your goal needs.' },
      end_call: { type: 'boolean', description: 'You hang up after saying this.' },
    },
    required: ['say', 'goal_reached', 'end_call'],
    additionalProperties: false,
  },
};

export interface CallerTurn {
  say: string;
  goalReached: boolean;
  endCall: boolean;
  tokens: number;
  /** Requests repeated because an answer broke the format (provider failures are retried inside the adapters). */
  retries: number;
}

/**
 * `Caller: ...` / `Agent: ...` lines (tool entries left out). `heardBy: 'caller'`: agent lines are
 * what the caller heard (audio mode), as the simulated caller only knows that.
 */
export function transcriptText(t: TranscriptEntryJson[], heardBy?: 'caller'): string {
  const text = t
    .filter((e) => e.role !== 'tool')
    .map((e) => `${e.role === 'caller' ? 'Caller' : 'Agent'}: ${heardBy === 'caller' && e.role === 'agent' && e.heard !== undefined ? e.heard : e.content}`)
    .join('\n');
  return text.length > MAX_TRANSCRIPT_CHARS ? text.slice(-MAX_TRANSCRIPT_CHARS) : text;
}

export async function nextCallerTurn(
  llm: LlmProvider,
  c: { persona: string; goal: string },
  transcript: TranscriptEntryJson[],
  o: { clock: Clock; timeoutMs: number; signal: AbortSignal },
): Promise<CallerTurn> {
  const user =
    `Persona: ${c.persona.replace(/\s+/g, ' ').trim() || 'an ordinary caller'}\n` +
    `Goal: ${c.goal.replace(/\s+/g, ' ').trim()}\n\n` +
    `Conversation so far:\n${transcriptText(transcript, 'caller') || '(nothing yet)'}\n\n` +
    'Your next turn as the caller:';
  let tokens = 0;
  let retries = 0;
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    const messages = [
      { role: 'system' as const, content: CALLER_PROMPT },
      { role: 'user' as const, content: attempt === 0 ? user : `${user}\n\n(Your previous answer was invalid: ${problem}. Call ${SIM_CALLER_TOOL} with say, goal_reached and end_call.)` },
    ];
    const answer = await forcedCall('caller', llm, messages, CALLER_TOOL, o);
    tokens += answer.tokens;
    retries += attempt > 0 ? 1 : 0;
    if ('error' in answer.parsed) {
      problem = answer.parsed.error;
      continue;
    }
    const v = answer.parsed.value;
    if (typeof v.say !== 'string') problem = '`say` must be a string';
    else if (typeof v.goal_reached !== 'boolean') problem = '`goal_reached` must be a boolean';
    else if (typeof v.end_call !== 'boolean') problem = '`end_call` must be a boolean';
    else return { say: v.say.trim().slice(0, MAX_LINE_CHARS), goalReached: v.goal_reached, endCall: v.end_call, tokens, retries };
  }
  throw new ProviderFailure('caller', `malformed answer twice (${problem})`);
}
