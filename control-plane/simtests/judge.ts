/**
 * The judge: an LLM that reads the finished transcript and gives every assertion a verdict with a
 * one-line reason quoting the turn it rests on, as one forced `record_assertion_verdicts` call.
 * Its prompt is its own. The answer is parsed strictly: exactly one verdict per assertion (by
 * 1-based `index`), `passed` a boolean, `reason` a non-empty string, `quote` a line of the transcript. A malformed
 * answer is asked again once (`retry_count` 1), then the case is `errored`.
 */
import type { Clock } from '../../shared/clock.js';
import type { LlmProvider, LlmToolSpec } from '../../shared/providers/types.js';
import { SIM_JUDGE_TOOL } from '../../shared/providers/llm/sim-simtest.js';
import { forcedCall } from './forced-call.js';
import { transcriptText } from './caller.js';
import type { AssertionResultJson, TranscriptEntryJson } from './store.js';

export const JUDGE_PROMPT =
  'You are a strict test judge. You read the transcript of a conversation between a simulated caller and an AI agent, ' +
  'and decide for each numbered assertion whether the transcript shows it is true. ' +
  `Answer only by calling ${SIM_JUDGE_TOOL} with one verdict per assertion: its index, passed, ` +
  'a one-line reason, and quote: the transcript line (verbatim, with its "Agent:" or "Caller:" prefix) the verdict rests on.';

const MAX_REASON_CHARS = 300;
const MAX_QUOTE_CHARS = 500;

export const JUDGE_TOOL: LlmToolSpec = {
  name: SIM_JUDGE_TOOL,
  description: 'One verdict per assertion.',
  parameters: {
    type: 'object',
    properties: {
      verdicts: {
        type: 'array',
        items: {
          type: 'object',
          properties: {
            index: { type: 'integer', description: 'The assertion number, from 1.' },
            passed: { type: 'boolean' },
            reason: { type: 'string', description: 'One line; quote the turn.' },
            quote: { type: 'string', description: 'The transcript line the verdict rests on, verbatim.' },
          },
          required: ['index', 'passed', 'reason', 'quote'],
          additionalProperties: false,
        },
      },
    },
    required: ['verdicts'],
    additionalProperties: false,
  },
};

export type JudgeOutcome =
  | { ok: true; results: AssertionResultJson[]; tokens: number; retries: number }
  | { ok: false; error: string; tokens: number; retries: number };

export async function judge(
  llm: LlmProvider,
  assertions: string[],
  transcript: TranscriptEntryJson[],
  o: { clock: Clock; timeoutMs: number; signal: AbortSignal },
): Promise<JudgeOutcome> {
  const user = `Transcript:\n${transcriptText(transcript) || '(empty)'}\n\nAssertions:\n${assertions.map((a, i) => `${i + 1}. ${a.replace(/\s+/g, ' ')}`).join('\n')}`;
  let tokens = 0;
  let retries = 0;
  let problem = '';
  for (let attempt = 0; attempt < 2; attempt++) {
    const messages = [
      { role: 'system' as const, content: JUDGE_PROMPT },
      { role: 'user' as const, content: attempt === 0 ? user : `${user}\n\n(Your previous answer was invalid: ${problem}. Call ${SIM_JUDGE_TOOL} again with exactly one verdict per assertion.)` },
    ];
    const answer = await forcedCall('judge', llm, messages, JUDGE_TOOL, o);
    tokens += answer.tokens;
    retries += attempt > 0 ? 1 : 0;
    const parsed = 'error' in answer.parsed ? answer.parsed : parseVerdicts(answer.parsed.value, assertions, transcriptText(transcript));
    if ('results' in parsed) return { ok: true, results: parsed.results, tokens, retries };
    problem = parsed.error;
  }
  return { ok: false, error: `judge answer malformed twice: ${problem}`, tokens, retries };
}

/**
 * Strict: every assertion exactly once, right types, and a quote that is really in the transcript
 * (compared case- and whitespace-insensitively; empty only when the transcript is); anything else
 * is an error naming the problem.
 */
export function parseVerdicts(value: Record<string, unknown>, assertions: string[], transcript: string): { results: AssertionResultJson[] } | { error: string } {
  const haystack = normalize(transcript);
  const verdicts = value.verdicts;
  if (!Array.isArray(verdicts)) return { error: '`verdicts` must be an array' };
  if (verdicts.length !== assertions.length) return { error: `expected ${assertions.length} verdicts, got ${verdicts.length}` };
  const byIndex = new Map<number, AssertionResultJson>();
  for (const [i, v] of verdicts.entries()) {
    if (!v || typeof v !== 'object' || Array.isArray(v)) return { error: `verdicts[${i}] must be an object` };
    const { index, passed, reason, quote } = v as Record<string, unknown>;
    if (!Number.isInteger(index) || (index as number) < 1 || (index as number) > assertions.length) return { error: `verdicts[${i}].index must be 1-${assertions.length}` };
    if (byIndex.has(index as number)) return { error: `assertion ${index} has two verdicts` };
    if (typeof passed !== 'boolean') return { error: `verdicts[${i}].passed must be a boolean` };
    if (typeof reason !== 'string' || !reason.trim()) return { error: `verdicts[${i}].reason must be a non-empty string` };
    if (typeof quote !== 'string') return { error: `verdicts[${i}].quote must be a string` };
    if (haystack ? !normalize(quote) || !haystack.includes(normalize(quote)) : quote.trim() !== '') return { error: `verdicts[${i}].quote is not a line of the transcript` };
    byIndex.set(index as number, {
      assertion: assertions[(index as number) - 1]!,
      passed,
      reason: reason.replace(/\s+/g, ' ').trim().slice(0, MAX_REASON_CHARS),
      quote: quote.trim().slice(0, MAX_QUOTE_CHARS),
    });
  }
  return { results: assertions.map((_, i) => byIndex.get(i + 1)!) };
}

function normalize(text: string): string {
  return text.replace(/\s+/g, ' ').trim().toLowerCase();
}
