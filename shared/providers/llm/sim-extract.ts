/**
 * What the `sim` LLM answers when a request forces one tool (`toolChoice`): the tool's arguments
 * extracted deterministically from the conversation text by keyword rules over its JSON Schema
 * (the post-call analysis asks this way; issue 16). Offline, no model: so tests and the demo get
 * real, explainable values without keys. Rules, per property (case-insensitive, whole words):
 *
 * - enum: the first allowed value that occurs in the text (underscores read as spaces), else null;
 * - boolean: true when a keyword of the property occurs, else false; keywords are the words of its
 *   name of 4+ letters (`refund_requested` -> refund, requested);
 * - number: the first number in the text, else null;
 * - string: the first sentence containing a keyword of the property, else null;
 * - array of strings: every such sentence (at most 10), else [].
 *
 * Anything else (nested objects) is null. The result always matches the schemas that
 * control-plane/analysis/fields.ts builds.
 */

const MAX_LIST_ITEMS = 10;
const MAX_STRING_CHARS = 200;

export function simExtract(parameters: Record<string, unknown>, text: string): Record<string, unknown> {
  const props = (parameters.properties ?? {}) as Record<string, Record<string, unknown>>;
  const sentences = text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);
  const out: Record<string, unknown> = {};
  for (const [name, schema] of Object.entries(props)) out[name] = extractOne(name, schema, text, sentences);
  return out;
}

function extractOne(name: string, schema: Record<string, unknown>, text: string, sentences: string[]): unknown {
  const types = ([] as unknown[]).concat(schema.type ?? []);
  if (Array.isArray(schema.enum)) {
    const values = schema.enum.filter((v): v is string => typeof v === 'string');
    return values.find((v) => containsWords(text, v.replaceAll('_', ' '))) ?? null;
  }
  const keys = keywords(name);
  if (types.includes('boolean')) return keys.some((k) => containsWords(text, k));
  if (types.includes('number')) {
    const m = /-?\d+(?:\.\d+)?/.exec(text);
    return m ? Number(m[0]) : null;
  }
  const matching = sentences.filter((s) => keys.some((k) => containsWords(s, k))).map((s) => s.slice(0, MAX_STRING_CHARS));
  if (types.includes('array')) return [...new Set(matching)].slice(0, MAX_LIST_ITEMS);
  if (types.includes('string')) return matching[0] ?? null;
  return null;
}

/** `refund_requested` / `refundRequested` -> ['refund', 'requested'] (words of 4+ letters). */
export function keywords(name: string): string[] {
  return name
    .replace(/([a-z])([A-Z])/g, '$1 $2')
    .split(/[^A-Za-z]+/)
    .map((w) => w.toLowerCase())
    .filter((w) => w.length >= 4);
}

export function containsWords(text: string, phrase: string): boolean {
  const escaped = phrase.trim().replace(/[.*+?^${}()|[\]\\]/g, '\\$&').replace(/\s+/g, '\\s+');
  return escaped !== '' && new RegExp(`(^|[^\\p{L}\\p{N}])${escaped}($|[^\\p{L}\\p{N}])`, 'iu').test(text);
}
