/**
 * Test case fields at the edge (spec doc 1 "Test case"): every problem is a 400 INVALID_REQUEST
 * naming the field (`assertions[2]`, `mocks.get_weather`). Arrays and objects arrive as JSON
 * values (proto `google.protobuf.Value`) so a wrong shape is reported precisely.
 */
import { invalid } from '../../shared/errors.js';
import { isPlainObject, longerThan } from '../http/validate.js';

export const MAX_PERSONA_CHARS = 4000;
export const MAX_GOAL_CHARS = 2000;
export const MAX_ASSERTIONS = 20;
export const MAX_ASSERTION_CHARS = 500;
export const MAX_TAGS = 20;
export const MAX_TAG_CHARS = 50;
export const MAX_MOCKS = 50;
/** A canned tool answer, serialised. */
export const MAX_MOCK_JSON_CHARS = 20_000;
export const MIN_CASE_TURNS = 1;
export const MAX_CASE_TURNS = 50;
export const DEFAULT_CASE_TURNS = 10;
/** Cases per agent (checked before the insert for the message; held exactly by the database, migration 0023). */
export const MAX_CASES_PER_AGENT = 200;

/** Non-empty list of non-empty statements. */
export function parseAssertions(v: unknown): string[] {
  if (!Array.isArray(v)) throw invalid('assertions', 'must be an array of strings');
  if (v.length === 0) throw invalid('assertions', 'must hold at least one assertion');
  if (v.length > MAX_ASSERTIONS) throw invalid('assertions', `must hold at most ${MAX_ASSERTIONS} assertions`);
  return v.map((a, i) => {
    if (typeof a !== 'string' || !a.trim()) throw invalid(`assertions[${i}]`, 'must be a non-empty string');
    if (longerThan(a, MAX_ASSERTION_CHARS)) throw invalid(`assertions[${i}]`, `must be at most ${MAX_ASSERTION_CHARS} characters`);
    return a.trim();
  });
}

/** Trimmed, de-duplicated, order kept. `gate` marks the cases the publish gate runs. */
export function parseTags(v: unknown): string[] {
  if (!Array.isArray(v)) throw invalid('tags', 'must be an array of strings');
  if (v.length > MAX_TAGS) throw invalid('tags', `must hold at most ${MAX_TAGS} tags`);
  const out: string[] = [];
  v.forEach((t, i) => {
    if (typeof t !== 'string' || !t.trim()) throw invalid(`tags[${i}]`, 'must be a non-empty string');
    if (longerThan(t, MAX_TAG_CHARS)) throw invalid(`tags[${i}]`, `must be at most ${MAX_TAG_CHARS} characters`);
    if (!out.includes(t.trim())) out.push(t.trim());
  });
  return out;
}

/** `{tool_name: canned JSON}`: any JSON value per tool, returned to the model as the tool's result. */
export function parseMocks(v: unknown): Record<string, unknown> {
  if (!isPlainObject(v)) throw invalid('mocks', 'must be an object of tool name -> canned JSON result');
  const entries = Object.entries(v);
  if (entries.length > MAX_MOCKS) throw invalid('mocks', `must name at most ${MAX_MOCKS} tools`);
  for (const [name, value] of entries) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) throw invalid(`mocks.${name}`, 'must be a tool name (letters, digits, _ and -, at most 64)');
    if (value === null || value === undefined) throw invalid(`mocks.${name}`, 'must be a JSON value (not null)');
    if (JSON.stringify(value).length > MAX_MOCK_JSON_CHARS) throw invalid(`mocks.${name}`, `must be at most ${MAX_MOCK_JSON_CHARS} characters of JSON`);
  }
  return v;
}

export function parseMaxTurns(v: number | undefined): number | undefined {
  if (v === undefined) return undefined;
  if (!Number.isInteger(v) || v < MIN_CASE_TURNS || v > MAX_CASE_TURNS) throw invalid('max_turns', `must be an integer between ${MIN_CASE_TURNS} and ${MAX_CASE_TURNS}`);
  return v;
}

/** Distinct UUIDs (the run's `case_ids`). */
export function parseCaseIds(v: unknown, isUuid: (s: string) => boolean): string[] {
  if (!Array.isArray(v)) throw invalid('case_ids', 'must be an array of test case ids');
  if (v.length === 0) throw invalid('case_ids', 'must name at least one test case (omit it to run every case)');
  const out: string[] = [];
  v.forEach((id, i) => {
    if (typeof id !== 'string' || !isUuid(id)) throw invalid(`case_ids[${i}]`, 'must be a test case id (UUID)');
    if (!out.includes(id.toLowerCase())) out.push(id.toLowerCase());
  });
  return out;
}
