/**
 * QA rubric rules, pure: the request checks (400 naming the exact field, e.g. `criteria[1].weight`),
 * the JSON Schema the scoring LLM fills, the checks of its answer that JSON Schema cannot express
 * (every criterion once, quotes taken from the transcript) and the overall score and flag.
 */
import { invalid } from '../../shared/errors.js';
import { longerThan } from '../http/validate.js';

export interface QaCriterion {
  name: string;
  weight: number;
  description?: string;
}

export interface CriterionScore {
  name: string;
  weight: number;
  score: number;
  justification: string;
  quote: string;
}

/** Each criterion is scored by the LLM on every call: bounded like analysis fields. */
export const MAX_CRITERIA = 20;
export const MAX_CRITERION_NAME_CHARS = 100;
export const MAX_CRITERION_DESCRIPTION_CHARS = 500;
/** Weights are relative; the bound only keeps sums and means well inside doubles. */
export const MAX_WEIGHT = 1000;
export const MAX_JUSTIFICATION_CHARS = 500;
export const MAX_QUOTE_CHARS = 500;

/** Checks the `criteria` JSON of a create or update and returns it normalised (trimmed, no extra keys). */
export function parseCriteria(value: unknown): QaCriterion[] {
  if (!Array.isArray(value)) throw invalid('criteria', 'must be an array of {name, weight, description?}');
  if (value.length === 0) throw invalid('criteria', 'must list at least one criterion');
  if (value.length > MAX_CRITERIA) throw invalid('criteria', `must list at most ${MAX_CRITERIA} criteria`);
  const seen = new Set<string>();
  return value.map((raw, i) => {
    const at = `criteria[${i}]`;
    if (!raw || typeof raw !== 'object' || Array.isArray(raw)) throw invalid(at, 'must be an object {name, weight, description?}');
    const c = raw as Record<string, unknown>;
    const name = typeof c.name === 'string' ? c.name.trim() : '';
    if (!name) throw invalid(`${at}.name`, 'is required');
    if (longerThan(name, MAX_CRITERION_NAME_CHARS)) throw invalid(`${at}.name`, `must be at most ${MAX_CRITERION_NAME_CHARS} characters`);
    // Case-insensitive: the model answers per name, and `Empathy` / `empathy` would be one criterion to it.
    if (seen.has(name.toLowerCase())) throw invalid(`${at}.name`, `duplicates the criterion "${name}"`);
    seen.add(name.toLowerCase());
    const w = c.weight;
    if (typeof w !== 'number' || !Number.isFinite(w) || w <= 0 || w > MAX_WEIGHT) throw invalid(`${at}.weight`, `must be a number greater than 0 and at most ${MAX_WEIGHT}`);
    const out: QaCriterion = { name, weight: w };
    if (c.description !== undefined && c.description !== null) {
      if (typeof c.description !== 'string') throw invalid(`${at}.description`, 'must be a string');
      if (longerThan(c.description, MAX_CRITERION_DESCRIPTION_CHARS)) throw invalid(`${at}.description`, `must be at most ${MAX_CRITERION_DESCRIPTION_CHARS} characters`);
      if (c.description.trim()) out.description = c.description.trim();
    }
    return out;
  });
}

export function parseThreshold(value: number | undefined, isRequired: boolean): number | undefined {
  if (value === undefined) {
    if (isRequired) throw invalid('pass_threshold', 'is required (a number from 0 to 100)');
    return undefined;
  }
  if (!Number.isFinite(value) || value < 0 || value > 100) throw invalid('pass_threshold', 'must be a number from 0 to 100');
  return value;
}

/** Weighted mean of the scores, rounded to 0.1 (weights are positive, so the sum is too). */
export function overallScore(scores: Array<{ weight: number; score: number }>): number {
  const total = scores.reduce((a, s) => a + s.weight, 0);
  if (!(total > 0)) throw new Error('overallScore needs at least one positive weight');
  const mean = scores.reduce((a, s) => a + s.weight * s.score, 0) / total;
  return Math.round(mean * 10) / 10;
}

/** Flagged: below the threshold (a score equal to it passes), or a compliance problem was reported. */
export function isFlagged(overall: number, passThreshold: number, complianceIssue: boolean): boolean {
  return complianceIssue || overall < passThreshold;
}

export const QA_TOOL = 'record_qa_scores';

/** The JSON Schema of one scoring answer: one entry per criterion (names fixed by `enum`). */
export function scoringSchema(criteria: QaCriterion[]): Record<string, unknown> {
  return {
    type: 'object',
    properties: {
      criteria: {
        type: 'array',
        minItems: criteria.length,
        maxItems: criteria.length,
        items: {
          type: 'object',
          properties: {
            name: { type: 'string', enum: criteria.map((c) => c.name) },
            score: { type: 'number', minimum: 0, maximum: 100 },
            justification: { type: 'string', minLength: 1, maxLength: MAX_JUSTIFICATION_CHARS },
            quote: { type: 'string', minLength: 1, maxLength: MAX_QUOTE_CHARS, description: 'the transcript turn the score is based on, copied verbatim' },
          },
          required: ['name', 'score', 'justification', 'quote'],
          additionalProperties: false,
        },
      },
      compliance_issue: { type: 'boolean', description: 'true when the agent said something non-compliant (promises it cannot make, asking for secrets, ...)' },
      compliance_note: { type: ['string', 'null'], maxLength: MAX_JUSTIFICATION_CHARS },
    },
    required: ['criteria', 'compliance_issue', 'compliance_note'],
    additionalProperties: false,
  };
}

export interface ScoringAnswer {
  criteria: Array<{ name: string; score: number; justification: string; quote: string }>;
  compliance_issue: boolean;
  compliance_note: string | null;
}

/**
 * What JSON Schema cannot say about an answer that matches `scoringSchema`: every criterion
 * exactly once, and every quote found in the transcript (case and spacing aside). Returns the
 * problems, empty when fine; they are shown to the model on its one retry.
 */
export function answerProblems(answer: ScoringAnswer, criteria: QaCriterion[], transcript: string): string[] {
  const problems: string[] = [];
  const counts = new Map<string, number>();
  for (const c of answer.criteria) counts.set(c.name, (counts.get(c.name) ?? 0) + 1);
  for (const c of criteria) {
    const n = counts.get(c.name) ?? 0;
    if (n !== 1) problems.push(`criterion "${c.name}" must be scored exactly once (got ${n})`);
  }
  const haystack = normalise(transcript);
  answer.criteria.forEach((c, i) => {
    if (!haystack.includes(normalise(c.quote))) problems.push(`/criteria/${i}/quote is not text of the transcript; copy one turn verbatim`);
  });
  return problems;
}

/** The answer in rubric order, with each criterion's weight. Assumes `answerProblems` found none. */
export function scoresOf(answer: ScoringAnswer, criteria: QaCriterion[]): CriterionScore[] {
  return criteria.map((c) => {
    const a = answer.criteria.find((x) => x.name === c.name)!;
    return { name: c.name, weight: c.weight, score: a.score, justification: a.justification.trim(), quote: a.quote.trim() };
  });
}

function normalise(s: string): string {
  return s.toLowerCase().replace(/\s+/g, ' ').trim();
}
