/**
 * `{{key}}` and `{{key|default}}` substitution for prompts and greetings. Unknown keys without a
 * default are left empty (never echoed as braces to a caller). Values are inserted verbatim.
 */
const PLACEHOLDER = /\{\{\s*([a-zA-Z0-9_.-]+)\s*(?:\|([^}]*))?\}\}/g;

export function substitute(template: string, vars: Record<string, unknown>): string {
  return template.replace(PLACEHOLDER, (_m, key: string, dflt: string | undefined) => {
    const v = vars[key];
    if (v === undefined || v === null || v === '') return dflt !== undefined ? dflt.trim() : '';
    return typeof v === 'string' ? v : JSON.stringify(v);
  });
}

/** Stringifies dynamic variable values (numbers, booleans) for templates and records. */
export function normalizeVariables(input: Record<string, unknown> | undefined): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(input ?? {})) {
    if (v === null || v === undefined) continue;
    out[k] = typeof v === 'string' ? v : JSON.stringify(v);
  }
  return out;
}
