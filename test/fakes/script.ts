/**
 * Scripted replies for the LLM fakes (the same idea as the sim LLM): the first rule whose `match`
 * hits the last user text decides the reply; a request whose last turn is tool results gets
 * `afterTools` (or a summary of the results). No rule: echo.
 */
export interface ScriptRule {
  /** Substring (case-insensitive) or regex tested against the last user text. */
  match: string | RegExp;
  /** Spoken reply text. */
  reply?: string;
  /** Tool calls to make instead of (or besides) `reply`; several -> parallel calls at indexes 0, 1, … */
  toolCalls?: Array<{ name: string; arguments: Record<string, unknown> }>;
  /** Reply once the tool results come back. Default: `Done: <results joined>`. */
  afterTools?: string;
}

export interface ScriptedReply {
  text: string;
  toolCalls: Array<{ id: string; name: string; arguments: string }>;
}

export function scriptReply(
  rules: ScriptRule[],
  turn: { lastUserText: string; toolResults: string[] },
  callIdPrefix: string,
): ScriptedReply {
  const rule = rules.find((r) =>
    typeof r.match === 'string' ? turn.lastUserText.toLowerCase().includes(r.match.toLowerCase()) : r.match.test(turn.lastUserText),
  );
  if (turn.toolResults.length > 0)
    return { text: rule?.afterTools ?? `Done: ${turn.toolResults.join('; ')}`, toolCalls: [] };
  if (!rule) return { text: `You said: ${turn.lastUserText}`, toolCalls: [] };
  return {
    text: rule.reply ?? '',
    toolCalls: (rule.toolCalls ?? []).map((c, i) => ({
      id: `${callIdPrefix}${i}`,
      name: c.name,
      arguments: JSON.stringify(c.arguments),
    })),
  };
}

/** Splits text into word-ish pieces, keeping spaces, like a tokenizer's stream. */
export function textPieces(text: string): string[] {
  return text.match(/\S+\s*|\s+/g) ?? [];
}

/** Splits a string into pieces of `size` characters (tool-argument fragments). */
export function fragments(s: string, size: number): string[] {
  const out: string[] = [];
  for (let i = 0; i < s.length; i += size) out.push(s.slice(i, i + size));
  return out.length > 0 ? out : [''];
}
