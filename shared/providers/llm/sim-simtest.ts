/**
 * What the `sim` LLM answers to the two forced calls of simulation tests (issue 20,
 * control-plane/simtests), offline and deterministic, so tests and the demo run without keys.
 * Both read the request's first user message, which control-plane/simtests writes in this layout:
 *
 * - simulated caller (`simulated_caller_turn`): a `Goal: ...` line and the transcript so far as
 *   `Caller: ...` / `Agent: ...` lines. The scripted caller's lines are the goal's quoted phrases
 *   (`Ask "what is the weather in Paris" then say "bye"`), or the whole goal when it quotes
 *   nothing. It says line k on its k-th turn; once every line was said and answered it reports
 *   `goal_reached` (an empty `say`). A goal containing `hang up` ends the call after the last line.
 * - judge (`record_assertion_verdicts`): the transcript lines, then `Assertions:` with one
 *   `N. text` line each. An assertion passes when one Agent line contains every phrase it quotes
 *   (or, quoting nothing, every keyword of 4+ letters outside STOP_WORDS), case-insensitive;
 *   `quote` is that line (else the first Agent line) and `reason` names what was or was not said.
 */
import { containsWords, keywords } from './sim-extract.js';

export const SIM_CALLER_TOOL = 'simulated_caller_turn';
export const SIM_JUDGE_TOOL = 'record_assertion_verdicts';

/** Words of an assertion that say who acts, not what is said. */
const STOP_WORDS = new Set(['agent', 'caller', 'user', 'says', 'said', 'should', 'must', 'that', 'this', 'with', 'their', 'them', 'then', 'tells', 'mentions', 'answer', 'answers', 'reply', 'replies', 'does', 'from', 'about', 'have', 'will']);

export function simCallerTurn(material: string): Record<string, unknown> {
  const goal = /^Goal:\s*(.*)$/m.exec(material)?.[1]?.trim() ?? '';
  const quoted = [...goal.matchAll(/"([^"]+)"/g)].map((m) => m[1]!.trim()).filter(Boolean);
  const lines = quoted.length ? quoted : goal ? [goal] : ['Hello?'];
  const transcript = transcriptLines(material);
  const said = transcript.filter((l) => l.startsWith('Caller:')).length;
  if (said < lines.length) {
    const last = said === lines.length - 1;
    return { say: lines[said]!, goal_reached: false, end_call: last && /\bhang up\b/i.test(goal) };
  }
  return { say: '', goal_reached: true, end_call: true };
}

export function simJudgeVerdicts(material: string): Record<string, unknown> {
  const [before, after = ''] = material.split(/^Assertions:\s*$/m);
  const lines = transcriptLines(before ?? '');
  const agent = lines.filter((l) => l.startsWith('Agent:'));
  // The quote of a failed assertion: the first agent line, else the first line at all.
  const fallback = agent[0] ?? lines[0] ?? '';
  const assertions = after
    .split('\n')
    .map((l) => /^\s*(\d+)\.\s*(.*)$/.exec(l))
    .filter((m): m is RegExpExecArray => m !== null)
    .map((m) => ({ index: Number(m[1]), text: m[2]!.trim() }));
  const verdicts = assertions.map(({ index, text }) => {
    const quoted = [...text.matchAll(/"([^"]+)"/g)].map((m) => m[1]!);
    const needles = quoted.length ? quoted : keywords(text).filter((w) => !STOP_WORDS.has(w));
    const hit = needles.length ? agent.find((l) => needles.every((n) => containsWords(l, n))) : undefined;
    const list = needles.map((n) => `"${n}"`).join(', ') || '(nothing to look for)';
    return hit
      ? { index, passed: true, reason: `the agent said ${list} in "${hit}"`, quote: hit }
      : { index, passed: false, reason: `no agent turn says ${list}; closest: "${fallback}"`, quote: fallback };
  });
  return { verdicts };
}

function transcriptLines(text: string): string[] {
  return text
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l.startsWith('Caller:') || l.startsWith('Agent:'));
}
