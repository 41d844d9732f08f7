/**
 * Characters Postgres cannot store: text and jsonb refuse U+0000, jsonb refuses a UTF-16 surrogate
 * without its partner (the `\ud800` escape). The API edges refuse them (400 naming the field); the
 * call records, which must never lose a row to one stray character, replace them.
 */
const UNSTORABLE = /\u0000|[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/;
const UNSTORABLE_ALL = new RegExp(UNSTORABLE.source, 'g');

/** What is wrong with `s` for storage, as a field problem ("must not contain ..."); undefined when nothing. */
export function unstorableProblem(s: string): string | undefined {
  if (!UNSTORABLE.test(s)) return undefined;
  return s.includes('\u0000') ? 'must not contain NUL (\\u0000) characters' : 'must not contain unpaired UTF-16 surrogates';
}

/** `s` with NULs dropped and lone surrogates replaced by U+FFFD. */
export function storableText(s: string): string {
  return UNSTORABLE.test(s) ? s.replace(UNSTORABLE_ALL, (c) => (c === '\u0000' ? '' : '\uFFFD')) : s;
}
