/**
 * Knowledge search over workspace memory items (issue 19; docs/flows.md).
 *
 * - `voiceplane_text_search_config(language)`: language code -> text search configuration, the
 *   same table as `shared/voice/text-search.ts` (a test checks they agree). Unknown: `simple`.
 * - `memory_items.search_vector`: title (weight A) and the first 200 000 characters of the content
 *   (weight B), in the configuration of the item's `metadata.language` (default `en`). Stored and
 *   generated, so every write path keeps it current with no trigger or job; GIN-indexed.
 *   Content past 200 000 characters is not searchable (a tsvector is capped at 1 MB).
 */
export const m0015_knowledge_search = {
  version: 15,
  name: 'knowledge_search',
  sql: /* sql */ `
create function voiceplane_text_search_config(language text) returns regconfig
language sql immutable parallel safe as $$
  select case lower(split_part(split_part(coalesce(language, ''), '-', 1), '_', 1))
    when 'ar' then 'arabic'::regconfig
    when 'ca' then 'catalan'::regconfig
    when 'da' then 'danish'::regconfig
    when 'de' then 'german'::regconfig
    when 'el' then 'greek'::regconfig
    when 'en' then 'english'::regconfig
    when 'es' then 'spanish'::regconfig
    when 'eu' then 'basque'::regconfig
    when 'fi' then 'finnish'::regconfig
    when 'fr' then 'french'::regconfig
    when 'ga' then 'irish'::regconfig
    when 'hi' then 'hindi'::regconfig
    when 'hu' then 'hungarian'::regconfig
    when 'hy' then 'armenian'::regconfig
    when 'id' then 'indonesian'::regconfig
    when 'it' then 'italian'::regconfig
    when 'lt' then 'lithuanian'::regconfig
    when 'ne' then 'nepali'::regconfig
    when 'nl' then 'dutch'::regconfig
    when 'no' then 'norwegian'::regconfig
    when 'nb' then 'norwegian'::regconfig
    when 'pt' then 'portuguese'::regconfig
    when 'ro' then 'romanian'::regconfig
    when 'ru' then 'russian'::regconfig
    when 'sr' then 'serbian'::regconfig
    when 'sv' then 'swedish'::regconfig
    when 'ta' then 'tamil'::regconfig
    when 'tr' then 'turkish'::regconfig
    when 'yi' then 'yiddish'::regconfig
    else 'simple'::regconfig
  end
$$;
alter table memory_items add column search_vector tsvector generated always as (
  setweight(to_tsvector(voiceplane_text_search_config(coalesce(metadata->>'language', 'en')), title), 'A') ||
  setweight(to_tsvector(voiceplane_text_search_config(coalesce(metadata->>'language', 'en')), left(content, 200000)), 'B')
) stored;
create index memory_items_search_idx on memory_items using gin (search_vector);
`,
};
