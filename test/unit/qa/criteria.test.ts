/**
 * QA rubric rules (control-plane/qa/criteria.ts) with known vectors: request checks naming the
 * field, the weighted mean and the flag, the answer checks beyond JSON Schema; and the sim LLM's
 * offline scoring (shared/providers/llm/sim-qa.ts) through askForObject, the path the job uses.
 */
import { Ajv } from 'ajv';
import { describe, expect, it } from 'vitest';
import { askForObject } from '../../../control-plane/analysis/ask.js';
import {
  MAX_CRITERIA,
  QA_TOOL,
  answerProblems,
  isFlagged,
  overallScore,
  parseCriteria,
  parseThreshold,
  scoresOf,
  scoringSchema,
  type ScoringAnswer,
} from '../../../control-plane/qa/criteria.js';
import { AppError } from '../../../shared/errors.js';
import { realClock } from '../../../shared/clock.js';
import { createSimLlm } from '../../../shared/providers/llm/sim.js';
import { SIM_QA_TOOL, simQaScores } from '../../../shared/providers/llm/sim-qa.js';
import type { LlmProvider, LlmRequest } from '../../../shared/providers/types.js';

function fieldOf(fn: () => unknown): string | undefined {
  try {
    fn();
  } catch (err) {
    expect(err).toBeInstanceOf(AppError);
    return (err as AppError).details?.[0]?.field;
  }
  throw new Error('expected a 400');
}

describe('parseCriteria', () => {
  it('normalises valid criteria (trimmed, no extra keys, empty description dropped)', () => {
    expect(parseCriteria([{ name: ' Greeting ', weight: 1, description: ' says hello ', extra: 1 }, { name: 'Resolution', weight: 2.5, description: ' ' }])).toEqual([
      { name: 'Greeting', weight: 1, description: 'says hello' },
      { name: 'Resolution', weight: 2.5 },
    ]);
  });

  it('names the offending field', () => {
    expect(fieldOf(() => parseCriteria('x'))).toBe('criteria');
    expect(fieldOf(() => parseCriteria([]))).toBe('criteria');
    expect(fieldOf(() => parseCriteria(Array.from({ length: MAX_CRITERIA + 1 }, (_, i) => ({ name: `c${i}`, weight: 1 }))))).toBe('criteria');
    expect(fieldOf(() => parseCriteria([7]))).toBe('criteria[0]');
    expect(fieldOf(() => parseCriteria([{ weight: 1 }]))).toBe('criteria[0].name');
    expect(fieldOf(() => parseCriteria([{ name: 'a', weight: 1 }, { name: 'A', weight: 1 }]))).toBe('criteria[1].name');
    expect(fieldOf(() => parseCriteria([{ name: 'a', weight: 0 }]))).toBe('criteria[0].weight');
    expect(fieldOf(() => parseCriteria([{ name: 'a', weight: -1 }]))).toBe('criteria[0].weight');
    expect(fieldOf(() => parseCriteria([{ name: 'a', weight: '2' }]))).toBe('criteria[0].weight');
    expect(fieldOf(() => parseCriteria([{ name: 'a', weight: 1 }, { name: 'b', weight: 1, description: 3 }]))).toBe('criteria[1].description');
    expect(parseCriteria(Array.from({ length: MAX_CRITERIA }, (_, i) => ({ name: `c${i}`, weight: 1 })))).toHaveLength(MAX_CRITERIA);
  });

  it('pass_threshold is 0-100 and required on create', () => {
    expect(parseThreshold(0, true)).toBe(0);
    expect(parseThreshold(100, true)).toBe(100);
    expect(parseThreshold(undefined, false)).toBeUndefined();
    expect(fieldOf(() => parseThreshold(undefined, true))).toBe('pass_threshold');
    expect(fieldOf(() => parseThreshold(100.5, false))).toBe('pass_threshold');
    expect(fieldOf(() => parseThreshold(-1, false))).toBe('pass_threshold');
    expect(fieldOf(() => parseThreshold(Number.NaN, false))).toBe('pass_threshold');
  });
});

describe('overall score and flag', () => {
  it('is the weighted mean, rounded to 0.1', () => {
    expect(overallScore([{ weight: 1, score: 100 }])).toBe(100);
    // (1*100 + 3*0) / 4 = 25
    expect(overallScore([{ weight: 1, score: 100 }, { weight: 3, score: 0 }])).toBe(25);
    // (2*90 + 1*45) / 3 = 75
    expect(overallScore([{ weight: 2, score: 90 }, { weight: 1, score: 45 }])).toBe(75);
    // (1*100 + 1*0 + 1*0) / 3 = 33.333 -> 33.3
    expect(overallScore([{ weight: 1, score: 100 }, { weight: 1, score: 0 }, { weight: 1, score: 0 }])).toBe(33.3);
    // (0.5*67 + 1.5*50) / 2 = 54.25 -> 54.3
    expect(overallScore([{ weight: 0.5, score: 67 }, { weight: 1.5, score: 50 }])).toBe(54.3);
    expect(() => overallScore([])).toThrow();
  });

  it('flags below the threshold (equal passes) or on a compliance problem', () => {
    expect(isFlagged(69.9, 70, false)).toBe(true);
    expect(isFlagged(70, 70, false)).toBe(false);
    expect(isFlagged(100, 70, true)).toBe(true);
    expect(isFlagged(0, 0, false)).toBe(false);
  });
});

const CRITERIA = parseCriteria([
  { name: 'Polite greeting', weight: 1 },
  { name: 'Refund explained', weight: 3 },
]);
const TRANSCRIPT = ['Caller: Hi, I want a refund for order 12.', 'Agent: Good morning! A polite greeting to you.', 'Agent: Your refund is on its way.'].join('\n');

describe('answer checks beyond JSON Schema', () => {
  const good: ScoringAnswer = {
    criteria: [
      { name: 'Refund explained', score: 50, justification: 'mentions the refund', quote: 'Agent: Your refund is on its way.' },
      { name: 'Polite greeting', score: 100, justification: 'greets', quote: 'good  MORNING! a polite greeting' },
    ],
    compliance_issue: false,
    compliance_note: null,
  };

  it('accepts every criterion once with quotes from the transcript (case and spacing aside)', () => {
    expect(answerProblems(good, CRITERIA, TRANSCRIPT)).toEqual([]);
    expect(scoresOf(good, CRITERIA)).toEqual([
      { name: 'Polite greeting', weight: 1, score: 100, justification: 'greets', quote: 'good  MORNING! a polite greeting' },
      { name: 'Refund explained', weight: 3, score: 50, justification: 'mentions the refund', quote: 'Agent: Your refund is on its way.' },
    ]);
  });

  it('reports a missing or repeated criterion and an invented quote', () => {
    const twice = { ...good, criteria: [good.criteria[0], good.criteria[0]] };
    expect(answerProblems(twice, CRITERIA, TRANSCRIPT)).toEqual([
      'criterion "Polite greeting" must be scored exactly once (got 0)',
      'criterion "Refund explained" must be scored exactly once (got 2)',
    ]);
    const invented = { ...good, criteria: [good.criteria[0], { ...good.criteria[1], quote: 'Agent: I apologise.' }] };
    expect(answerProblems(invented, CRITERIA, TRANSCRIPT)).toEqual(['/criteria/1/quote is not text of the transcript; copy one turn verbatim']);
  });
});

describe('sim LLM scoring (offline)', () => {
  it('scores by the keywords the agent said, quotes the turn, and matches the schema', () => {
    expect(SIM_QA_TOOL).toBe(QA_TOOL);
    const schema = scoringSchema(parseCriteria([...CRITERIA, { name: 'Upsell', weight: 1 }, { name: 'Ask', weight: 1 }]));
    const out = simQaScores(schema, TRANSCRIPT) as unknown as ScoringAnswer;
    expect(new Ajv({ strict: false }).validate(schema, out)).toBe(true);
    expect(out).toEqual({
      criteria: [
        { name: 'Polite greeting', score: 100, justification: 'the agent said "polite", "greeting"', quote: 'Agent: Good morning! A polite greeting to you.' },
        // "refund" said by the agent, "explained" not: 1 of 2 keywords.
        { name: 'Refund explained', score: 50, justification: 'the agent said "refund"; the agent never said "explained"', quote: 'Agent: Your refund is on its way.' },
        { name: 'Upsell', score: 0, justification: 'the agent never said "upsell"', quote: 'Agent: Good morning! A polite greeting to you.' },
        { name: 'Ask', score: 0, justification: 'the criterion name has no keyword to look for', quote: 'Agent: Good morning! A polite greeting to you.' },
      ],
      compliance_issue: false,
      compliance_note: null,
    });
  });

  it('reports a compliance problem only for what the agent said', () => {
    const schema = scoringSchema(CRITERIA);
    expect(simQaScores(schema, 'Caller: I guarantee I paid.\nAgent: Let me check.')).toMatchObject({ compliance_issue: false });
    expect(simQaScores(schema, 'Caller: Hi.\nAgent: I guarantee a refund today.')).toMatchObject({
      compliance_issue: true,
      compliance_note: 'non-compliant agent turn: Agent: I guarantee a refund today.',
    });
  });

  it('askForObject with the sim LLM returns a valid answer in one request', async () => {
    const out = await askForObject({
      llm: createSimLlm(),
      schema: scoringSchema(CRITERIA),
      description: 'scores',
      transcript: TRANSCRIPT,
      clock: realClock,
      timeoutMs: 5000,
      signal: new AbortController().signal,
      tool: QA_TOOL,
      prompt: 'score',
      check: (v) => answerProblems(v as unknown as ScoringAnswer, CRITERIA, TRANSCRIPT),
    });
    expect(out.ok).toBe(true);
    expect(out.requests).toBe(1);
    const scores = scoresOf((out as { values: unknown }).values as ScoringAnswer, CRITERIA);
    expect(overallScore(scores)).toBe(62.5); // (1*100 + 3*50) / 4
  });
});

describe('askForObject with answer checks', () => {
  function scripted(answers: unknown[]): LlmProvider & { seen: LlmRequest[] } {
    const seen: LlmRequest[] = [];
    return {
      label: 'scripted',
      model: 'm',
      capabilities: { tools: true, parallelToolCalls: false },
      seen,
      async *stream(req) {
        seen.push(req);
        yield { type: 'tool_calls', calls: [{ id: `c${seen.length}`, name: QA_TOOL, arguments: JSON.stringify(answers[seen.length - 1] ?? {}) }] };
      },
    };
  }
  const valid = {
    criteria: [
      { name: 'Polite greeting', score: 80, justification: 'ok', quote: 'Agent: Good morning! A polite greeting to you.' },
      { name: 'Refund explained', score: 60, justification: 'ok', quote: 'Agent: Your refund is on its way.' },
    ],
    compliance_issue: false,
    compliance_note: null,
  };
  const ask = (llm: LlmProvider) =>
    askForObject({
      llm,
      schema: scoringSchema(CRITERIA),
      description: 'scores',
      transcript: TRANSCRIPT,
      clock: realClock,
      timeoutMs: 5000,
      signal: new AbortController().signal,
      tool: QA_TOOL,
      prompt: 'score',
      check: (v) => answerProblems(v as unknown as ScoringAnswer, CRITERIA, TRANSCRIPT),
    });

  it('retries once with the problems when a quote is invented, forcing the QA tool', async () => {
    const bad = { ...valid, criteria: [valid.criteria[0], { ...valid.criteria[1], quote: 'Agent: made up' }] };
    const llm = scripted([bad, valid]);
    const out = await ask(llm);
    expect(out).toEqual({ ok: true, values: valid, requests: 2 });
    expect(llm.seen[0].toolChoice).toBe(QA_TOOL);
    expect(llm.seen[0].messages[0]).toEqual({ role: 'system', content: 'score' });
    expect(JSON.stringify(llm.seen[1].messages.at(-1))).toContain('/criteria/1/quote is not text of the transcript');
  });

  it('a score out of range twice is ok: false naming the path', async () => {
    const bad = { ...valid, criteria: [{ ...valid.criteria[0], score: 120 }, valid.criteria[1]] };
    const out = await ask(scripted([bad, bad]));
    expect(out.ok).toBe(false);
    expect((out as { error: string }).error).toContain('/criteria/0/score must be <= 100');
  });
});
