/**
 * CSV contact import (spec doc 2, rule 4), streamed end to end: bytes -> strict UTF-8 decoder ->
 * `csv-parse` -> batches of 500 rows inserted inside one transaction. The file never sits in
 * memory whole; a failure anywhere (too large, not UTF-8, no phone column) rolls back every row
 * of this upload, so a refused file adds nothing. A second upload appends.
 *
 * - UTF-8 with or without BOM (the decoder drops it); quoted fields, embedded commas and newlines,
 *   CRLF: csv-parse. Empty lines and rows of empty values are skipped and not counted.
 * - Phone column: the header `column_map` maps to `phone`, else the first header containing
 *   phone, number, mobile, cell or tel (case-insensitive). None: 400 naming the column.
 * - Numbers: spaces, dashes, parentheses and dots stripped, `+` added when missing; what is left
 *   must be digits that libphonenumber-js accepts as E.164 (an extension or other trailing text is
 *   not stripped: invalid); otherwise counted in `invalid` and dropped.
 * - Every other column is a dynamic variable (`{{column}}`, renamed through `column_map`).
 */
import { pipeline, Readable } from 'node:stream';
import { CsvError, parse } from 'csv-parse';
import { AppError, invalid, notFound } from '../../shared/errors.js';
import { newId } from '../../shared/ids.js';
import { toE164 } from '../agents/telephony/phone.js';
import type { Sql } from '../../shared/db/client.js';
import { addVariableNames, insertContacts, lockCampaignUploads, TERMINAL, type CampaignRow, type CampaignStatus, type NewContact } from './store.js';
import { isStorableText } from '../http/input.js';

/** Spec limit: 10 MB per upload. */
export const MAX_CSV_BYTES = 10 * 1024 * 1024;
/** Columns of one file: each becomes a variable on every contact and a column of the export. */
export const MAX_CSV_COLUMNS = 200;
/** Characters of one header (a variable name). */
export const MAX_HEADER_CHARS = 256;
/** Distinct variable names of a campaign over all its uploads (the export's columns). */
export const MAX_CAMPAIGN_VARIABLES = 500;
const BATCH_ROWS = 500;
const PREVIEW_ROWS = 5;
const PHONE_HEADER = /phone|number|mobile|cell|tel/i;

export interface ImportSummary {
  total: number;
  valid: number;
  invalid: number;
  /** Valid rows not added: their number is in the campaign already (or earlier in the file). */
  duplicates: number;
  phone_column: string;
  headers: string[];
  preview: Array<Record<string, string>>;
}

/**
 * The spec's rule: spaces, dashes, parentheses and dots stripped, `+` added when missing, and what
 * is left must be `+` and digits that libphonenumber accepts. Anything else left over is invalid:
 * libphonenumber alone reads "+14155552671 ext 12", "...x12" or "...;x" as the number with an
 * extension, which the stored E.164 would silently drop (and the dial would not reach).
 */
export function normalisePhone(raw: string): string | undefined {
  const stripped = raw.trim().replace(/[\s\-().]/g, '');
  if (!/^\+?\d+$/.test(stripped)) return undefined;
  return toE164(stripped.startsWith('+') ? stripped : `+${stripped}`);
}

export function phoneColumn(headers: readonly string[], columnMap: Record<string, string>): number {
  const mapped = headers.findIndex((h) => columnMap[h]?.toLowerCase() === 'phone');
  if (mapped >= 0) return mapped;
  return headers.findIndex((h) => PHONE_HEADER.test(h));
}

export function tooLarge(): AppError {
  return new AppError('FILE_TOO_LARGE', `the CSV file exceeds ${MAX_CSV_BYTES} bytes (10 MB)`);
}

/** Strict UTF-8 over a byte stream, counting bytes against the 10 MB limit. */
async function* utf8(bytes: Iterable<Uint8Array> | AsyncIterable<Uint8Array>): AsyncGenerator<string> {
  const decoder = new TextDecoder('utf-8', { fatal: true });
  let size = 0;
  for await (const chunk of bytes) {
    size += chunk.length;
    if (size > MAX_CSV_BYTES) throw tooLarge();
    try {
      yield decoder.decode(chunk, { stream: true });
    } catch {
      throw invalid('file', `is not valid UTF-8 (bad bytes within the first ${size} bytes); save the file as UTF-8 and upload it again`);
    }
  }
  try {
    yield decoder.decode();
  } catch {
    throw invalid('file', 'is not valid UTF-8 (it ends inside a multi-byte character)');
  }
}

/** The whole upload, at most MAX_CSV_BYTES, read before any database work (see importCsv). */
async function readUpload(bytes: AsyncIterable<Uint8Array>): Promise<Uint8Array[]> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of bytes) {
    size += chunk.length;
    if (size > MAX_CSV_BYTES) throw tooLarge();
    chunks.push(chunk);
  }
  return chunks;
}

/** The upload's summary (the response body) and the campaign's status when the import committed. */
export interface ImportResult {
  summary: ImportSummary;
  /** Read under the row lock at the end: it may differ from the status before the import (a start meanwhile). */
  campaignStatus: CampaignStatus;
}

export async function importCsv(sql: Sql, campaign: CampaignRow, bytes: AsyncIterable<Uint8Array>, now: Date): Promise<ImportResult> {
  // The file is read in full first: a transaction open while a slow client trickles 10 MB would
  // hold a pooled connection (and the campaign's lock) for as long as the client likes.
  const file = await readUpload(bytes);
  // relax_quotes: a quote inside an unquoted field (`5" screen`, `O"Brien`) is text, as spreadsheets write it.
  const parser = parse({ bom: true, relax_column_count: true, relax_quotes: true, skip_empty_lines: true, skip_records_with_empty_values: true });
  const source = Readable.from(utf8(file));
  // pipeline destroys both streams on an error in either; the records loop below rethrows it.
  pipeline(source, parser, () => {});

  return sql.begin(async (tx) => {
    // Uploads to one campaign take turns from the start: each contact insert takes a key-share lock
    // on the campaign row (the foreign key), and the row lock at the end upgraded it, so two
    // concurrent uploads deadlocked (40P01, a 500). Not the row itself (store.ts).
    await lockCampaignUploads(tx, campaign.id);
    const summary: ImportSummary = { total: 0, valid: 0, invalid: 0, duplicates: 0, phone_column: '', headers: [], preview: [] };
    let phoneIdx = -1;
    let names: string[] = [];
    let batch: NewContact[] = [];
    try {
      for await (const record of parser as AsyncIterable<string[]>) {
        // Cells become text and jsonb values: a NUL (or a lone surrogate) would fail the insert as a 500.
        const badCell = record.findIndex((cell) => !isStorableText(cell));
        if (badCell >= 0) throw invalid('file', `record ${summary.total + 1}: column ${badCell + 1} contains a NUL or another character that cannot be stored`);
        if (summary.headers.length === 0) {
          if (record.length > MAX_CSV_COLUMNS) throw invalid('file', `has ${record.length} columns; at most ${MAX_CSV_COLUMNS}`);
          const long = record.findIndex((h) => h.trim().length > MAX_HEADER_CHARS);
          if (long >= 0) throw invalid('file', `the header of column ${long + 1} is longer than ${MAX_HEADER_CHARS} characters`);
          summary.headers = record.map((h) => h.trim());
          phoneIdx = phoneColumn(summary.headers, campaign.column_map);
          if (phoneIdx < 0) {
            throw invalid('phone', `the file has no phone column: no header contains phone, number, mobile, cell or tel (headers: ${summary.headers.join(', ')})`);
          }
          summary.phone_column = summary.headers[phoneIdx];
          names = summary.headers.map((h, i) => campaign.column_map[h] ?? (h || `column_${i + 1}`));
          // Each column becomes a variable: a second one of the same name would overwrite the first.
          const firstOf = new Map<string, number>();
          names.forEach((n, i) => {
            const first = firstOf.get(n);
            if (first !== undefined) throw invalid('file', `columns ${first + 1} and ${i + 1} are both named "${n}" (after column_map): each column becomes a variable, so names must be unique`);
            firstOf.set(n, i);
          });
          continue;
        }
        summary.total++;
        const phone = normalisePhone(record[phoneIdx] ?? '');
        if (!phone) {
          summary.invalid++;
          continue;
        }
        summary.valid++;
        const vars: Record<string, string> = {};
        names.forEach((n, i) => {
          if (i !== phoneIdx) vars[n] = record[i] ?? '';
        });
        if (summary.preview.length < PREVIEW_ROWS) summary.preview.push({ [summary.phone_column]: phone, ...vars });
        batch.push({ id: newId(), to_number: phone, dynamic_variables: vars });
        if (batch.length >= BATCH_ROWS) {
          summary.duplicates += await insertContacts(tx, campaign.id, batch, now);
          batch = [];
        }
      }
    } catch (err) {
      source.destroy();
      throw csvError(err);
    }
    if (summary.headers.length === 0) throw invalid('file', 'is empty: expected a header row and one row per contact');
    summary.duplicates += await insertContacts(tx, campaign.id, batch, now);
    const end = await addVariableNames(tx, campaign.id, names.filter((_, i) => i !== phoneIdx), MAX_CAMPAIGN_VARIABLES);
    // Cancelled (or finished, or deleted) while the file was imported: nothing of it is kept.
    if (!end.status) throw notFound('campaign');
    if (TERMINAL.has(end.status)) throw invalid('status', `the campaign became ${end.status} during the upload: a ${end.status} campaign takes no more contacts`);
    if (!end.added) throw invalid('file', `the campaign would have more than ${MAX_CAMPAIGN_VARIABLES} distinct variable names over its uploads`);
    return { summary, campaignStatus: end.status };
  });
}

/** csv-parse's own errors (an unclosed quote, ...) are the client's: 400 with its message. */
function csvError(err: unknown): unknown {
  if (err instanceof AppError) return err;
  const code = (err as { code?: string }).code;
  if (err instanceof CsvError || (typeof code === 'string' && code.startsWith('CSV_'))) return invalid('file', `is not valid CSV: ${(err as Error).message}`);
  return err;
}
