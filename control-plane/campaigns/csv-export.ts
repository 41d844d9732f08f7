/**
 * CSV export (spec doc 2, rule 7): `phone`, each dynamic variable (every upload's columns in
 * first-seen order), `status`, `attempts`, `duration_seconds`, `dialed_at`, `completed_at`,
 * `error_message`. Uploaded cells that a spreadsheet would run as a formula are neutralised
 * (`neutraliseFormula`). Produced batch by batch (keyset queries on `seq`), so a large campaign is never
 * held in memory and no connection waits on a slow reader; a campaign without contacts yields the header row alone.
 */
import { stringify } from 'csv-stringify/sync';
import type { Sql } from '../../shared/db/client.js';
import { contactBatches, type CampaignRow } from './store.js';

const BATCH_ROWS = 500;
/**
 * Records end in CRLF. csv-stringify quotes a field holding the record delimiter, a comma or a
 * quote, but not a bare LF or CR: `Lon\ndon` went out unquoted and split its row in two for every
 * CSV reader. Any line break quotes the field.
 */
const OPTIONS = { record_delimiter: 'windows', quoted_match: /[\r\n]/ } as const;
const FIXED_TAIL = ['status', 'attempts', 'duration_seconds', 'dialed_at', 'completed_at', 'error_message'];

/**
 * A variable's column header: its name, unless that is one of our columns (an upload with a
 * `status` or `phone` column beside its phone numbers): then `var_<name>` (and `var_var_<name>` if
 * that is taken too), so every header names one column and a reader going by name is never misled.
 */
export function variableHeaders(vars: readonly string[]): string[] {
  const taken = new Set(['phone', ...FIXED_TAIL, ...vars]);
  return vars.map((v) => {
    if (v !== 'phone' && !FIXED_TAIL.includes(v)) return v;
    let name = `var_${v}`;
    while (taken.has(name)) name = `var_${name}`;
    taken.add(name);
    return name;
  });
}

/** What a spreadsheet reads as the start of a formula (OWASP "CSV Injection"). */
const FORMULA_START = /^[=+\-@\t\r]/;

/**
 * A cell written by the uploader (a variable's header or value) that a spreadsheet would run as a
 * formula (`=HYPERLINK(...)`, `+cmd|...`, `@SUM(...)`) gets a leading single quote, which the
 * spreadsheet shows as text (OWASP's advice). Our own columns are left alone: `phone` is the E.164
 * number we normalised (always `+` and digits, and its `+` is meant), the others are our enums,
 * counts and timestamps; `error_message` is ours too but may quote a carrier's text, so it gets
 * the same treatment (it starts with our own words, so in practice it never changes).
 */
export function neutraliseFormula(cell: string): string {
  return FORMULA_START.test(cell) ? `'${cell}` : cell;
}

export async function* exportCsv(sql: Sql, campaign: CampaignRow): AsyncGenerator<string> {
  const vars = campaign.variable_names;
  yield stringify([['phone', ...variableHeaders(vars).map(neutraliseFormula), ...FIXED_TAIL]], OPTIONS);
  for await (const rows of contactBatches(sql, campaign.id, BATCH_ROWS)) {
    const records = rows.map((r) => [
      r.to_number,
      ...vars.map((v) => neutraliseFormula(r.dynamic_variables[v] ?? '')),
      r.status,
      String(r.attempts),
      r.duration_seconds === null ? '' : String(r.duration_seconds),
      r.dialed_at ? r.dialed_at.toISOString() : '',
      r.completed_at ? r.completed_at.toISOString() : '',
      neutraliseFormula(r.error_message ?? ''),
    ]);
    yield stringify(records, OPTIONS);
  }
}
