/**
 * Creates a client may retry (API conventions, "idempotency"): the client may choose the new row's
 * `id`; a repeat with the same id and the same body answers the row the first request created, and
 * the same id with another body is a 409. The 409 is the same whoever holds the id (another
 * workspace's row is never described or confirmed beyond "taken"), so ids cannot be probed.
 */
import { alreadyExists } from '../../shared/errors.js';
import { canonicalJson } from './validate.js';

export interface CreateOnce<Row> {
  /** The row with the chosen id, if any (whoever's it is). */
  find(): Promise<Row | undefined>;
  /** Inserts the new row; a unique violation on the id means a concurrent repeat won the race. */
  insert(): Promise<Row>;
  /** Whether an existing row is what this request would have created (same workspace, same fields). */
  same(existing: Row): boolean;
  /** `an agent`, `a campaign`: for the 409's message. */
  what: string;
}

export async function createOnce<Row>(c: CreateOnce<Row>): Promise<{ row: Row; created: boolean }> {
  // Looked up first: a repeat must not be refused by a create-time limit (rows per workspace) it does not add to.
  const before = await c.find();
  if (before) return { row: settle(c, before), created: false };
  try {
    return { row: await c.insert(), created: true };
  } catch (err) {
    if ((err as { code?: string }).code !== '23505') throw err;
    const after = await c.find();
    if (!after) throw err;
    return { row: settle(c, after), created: false };
  }
}

function settle<Row>(c: CreateOnce<Row>, existing: Row): Row {
  if (c.same(existing)) return existing;
  throw alreadyExists(`${c.what} with this id already exists with a different body (or the id is taken)`);
}

/** Field-by-field equality of the keys a create writes (JSON values compared canonically). */
export function sameFields(a: object, b: object, keys: readonly string[]): boolean {
  const x = a as Record<string, unknown>;
  const y = b as Record<string, unknown>;
  return keys.every((k) => canonicalJson(x[k]) === canonicalJson(y[k]));
}
