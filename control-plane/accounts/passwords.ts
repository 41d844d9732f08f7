/**
 * Password hashing with scrypt (memory-hard, built into Node). Stored form:
 * `scrypt$N$r$p$<salt b64url>$<hash b64url>` so parameters can be raised later without a migration:
 * verification reads them from the row.
 */
import { randomBytes, scrypt, timingSafeEqual, type ScryptOptions } from 'node:crypto';
import { boundedWork } from '../../shared/bounded-work.js';
import { AppError } from '../../shared/errors.js';

export interface ScryptParams {
  /** CPU/memory cost, a power of two. Default 2^15 (32 MiB of memory per hash with r=8). */
  N: number;
  /** Block size. Default 8. */
  r: number;
  /** Parallelism. Default 1. */
  p: number;
}

export const DEFAULT_SCRYPT: ScryptParams = { N: 2 ** 15, r: 8, p: 1 };
const SALT_BYTES = 16;
const HASH_BYTES = 32;
/** Refuse stored parameters above this cost (a tampered row must not pin the thread pool). */
const MAX_N = 2 ** 20;

/**
 * At most this many hashes run at once: libuv's pool has 4 threads, shared with DNS lookups (the
 * database's connections, outbound requests), zlib and file I/O, which must never wait behind a
 * flood of sign-ins (each default hash also holds 32 MiB). At most MAX_WAITING_HASHES wait, each at
 * most MAX_HASH_WAIT_MS: past either a sign-in is 503 with retry-after at once, and the backlog
 * never outlives the requests that made it (it kept the portal's logins out for a minute after a
 * 10 s flood).
 */
export const MAX_CONCURRENT_HASHES = 2;
export const MAX_WAITING_HASHES = 64;
export const MAX_HASH_WAIT_MS = 5_000;

const hashSlot = boundedWork({
  maxConcurrent: MAX_CONCURRENT_HASHES,
  maxWaiting: MAX_WAITING_HASHES,
  maxWaitMs: MAX_HASH_WAIT_MS,
  refused: () => new AppError('SERVICE_UNAVAILABLE', 'too many sign-ins in progress; retry in a moment', { retryAfterS: 1 }),
});

function scryptAsync(password: string, salt: Buffer, params: ScryptParams): Promise<Buffer> {
  // scrypt needs 128 * N * r bytes; give it twice that so the default maxmem (32 MiB) never refuses.
  const opts: ScryptOptions = { N: params.N, r: params.r, p: params.p, maxmem: 256 * params.N * params.r };
  return hashSlot(() => new Promise((resolve, reject) => scrypt(password.normalize('NFKC'), salt, HASH_BYTES, opts, (err, key) => (err ? reject(err) : resolve(key)))));
}

export async function hashPassword(password: string, params: ScryptParams = DEFAULT_SCRYPT): Promise<string> {
  const salt = randomBytes(SALT_BYTES);
  const hash = await scryptAsync(password, salt, params);
  return ['scrypt', params.N, params.r, params.p, salt.toString('base64url'), hash.toString('base64url')].join('$');
}

/** Constant-time check. A malformed or non-scrypt stored value (e.g. the org owner's `!`) never matches. */
export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const parts = stored.split('$');
  if (parts.length !== 6 || parts[0] !== 'scrypt') return false;
  const [N, r, p] = parts.slice(1, 4).map(Number);
  if (![N, r, p].every(Number.isInteger) || N < 2 || N > MAX_N || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const salt = Buffer.from(parts[4], 'base64url');
  const expected = Buffer.from(parts[5], 'base64url');
  if (expected.length !== HASH_BYTES) return false;
  const actual = await scryptAsync(password, salt, { N, r, p });
  return timingSafeEqual(actual, expected);
}

/** A real hash to verify against when the user does not exist, so timing does not reveal it. */
let dummy: Promise<string> | undefined;
export function dummyHash(): Promise<string> {
  // Not kept when it failed (a busy moment): the next sign-in computes it again.
  dummy ??= hashPassword(randomBytes(16).toString('hex')).catch((err: unknown) => {
    dummy = undefined;
    throw err;
  });
  return dummy;
}
