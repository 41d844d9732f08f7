/**
 * Agent language code -> Postgres text search configuration, for knowledge search (docs/flows.md).
 * The same table lives in SQL (`voiceplane_text_search_config`, migration 0015), which indexes each
 * memory item with the configuration of its `metadata.language`; keep the two in step.
 * Unknown languages use `simple` (no stemming, no stop words): still matches exact words.
 */
const CONFIGS: Record<string, string> = {
  ar: 'arabic', ca: 'catalan', da: 'danish', de: 'german', el: 'greek', en: 'english', es: 'spanish',
  eu: 'basque', fi: 'finnish', fr: 'french', ga: 'irish', hi: 'hindi', hu: 'hungarian', hy: 'armenian',
  id: 'indonesian', it: 'italian', lt: 'lithuanian', ne: 'nepali', nl: 'dutch', no: 'norwegian',
  nb: 'norwegian', pt: 'portuguese', ro: 'romanian', ru: 'russian', sr: 'serbian', sv: 'swedish',
  ta: 'tamil', tr: 'turkish', yi: 'yiddish',
};

/** `en`, `en-US`, `EN_gb` -> `english`; anything else -> `simple`. */
export function textSearchConfig(language: string | undefined): string {
  const code = (language ?? '').trim().toLowerCase().split(/[-_]/)[0] ?? '';
  return CONFIGS[code] ?? 'simple';
}

/** Codes of the table (the migration test checks SQL and TypeScript agree on each). */
export const TEXT_SEARCH_LANGUAGE_CODES = Object.keys(CONFIGS);
