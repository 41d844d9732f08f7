/**
 * What the `sim` LLM answers to a forced QA scoring call (`record_qa_scores`, issue 16): a score
 * per rubric criterion computed by keyword rules from the transcript, offline and deterministic,
 * so tests and the demo get real, explainable scores without keys. The transcript has one turn per
 * line (`Caller: ...` / `Agent: ...`). Per criterion (its names come from the schema's `enum`):
 *
 * - keywords: the words of its name of 4+ letters (`Polite greeting` -> polite, greeting);
 * - score: 100 x (keywords said in some Agent turn) / (keywords), rounded; 0 without keywords;
 * - quote: the first Agent turn containing a keyword, else the first Caller turn containing one,
 *   else the first Agent turn (always a verbatim line of the transcript);
 * - justification: which keywords the agent said or did not say.
 *
 * Compliance: an Agent turn containing one of COMPLIANCE_PHRASES sets `compliance_issue` with a
 * note quoting it. The answer always matches control-plane/qa/criteria.ts `scoringSchema`.
 */
import { containsWords, keywords } from './sim-extract.js';

export const SIM_QA_TOOL = 'record_qa_scores';
/** What an agent should not say on a call (promises it cannot keep, asking for secrets). */
export const COMPLIANCE_PHRASES = ['guarantee', 'guaranteed', 'password', 'social security number', 'full card number'];

export function simQaScores(parameters: Record<string, unknown>, transcript: string): Record<string, unknown> {
  const props = (parameters.properties ?? {}) as Record<string, any>;
  const names: string[] = (props.criteria?.items?.properties?.name?.enum ?? []).filter((n: unknown): n is string => typeof n === 'string');
  const lines = transcript
    .split('\n')
    .map((l) => l.trim())
    .filter(Boolean);
  const agent = lines.filter((l) => l.startsWith('Agent:'));
  const caller = lines.filter((l) => l.startsWith('Caller:'));
  const criteria = names.map((name) => {
    const keys = keywords(name);
    const said = keys.filter((k) => agent.some((l) => containsWords(l, k)));
    const score = keys.length ? Math.round((100 * said.length) / keys.length) : 0;
    const has = (l: string) => keys.some((k) => containsWords(l, k));
    const quote = agent.find(has) ?? caller.find(has) ?? agent[0] ?? lines[0] ?? '';
    const missing = keys.filter((k) => !said.includes(k));
    const justification = keys.length === 0
      ? 'the criterion name has no keyword to look for'
      : [said.length ? `the agent said ${said.map((k) => `"${k}"`).join(', ')}` : '', missing.length ? `the agent never said ${missing.map((k) => `"${k}"`).join(', ')}` : '']
          .filter(Boolean)
          .join('; ');
    return { name, score, justification, quote };
  });
  const offending = agent.find((l) => COMPLIANCE_PHRASES.some((p) => containsWords(l, p)));
  return {
    criteria,
    compliance_issue: offending !== undefined,
    compliance_note: offending ? `non-compliant agent turn: ${offending.slice(0, 200)}` : null,
  };
}
