import { randomBytes } from 'node:crypto';
import { v7 as uuidv7, validate as uuidValidate } from 'uuid';

/** Time-ordered UUID (v7) for resource rows: list order follows creation. */
export function newId(): string {
  return uuidv7();
}

export function isUuid(value: string): boolean {
  return uuidValidate(value);
}

/** Bearer-like ids (voice sessions, signed links): 128+ random bits, never sequential. */
export function newSecretId(bytes = 24): string {
  return randomBytes(bytes).toString('base64url');
}

/**
 * Voice session ids are bearer credentials (whoever holds one can join the call), so logs carry
 * only this 6-character prefix: enough to correlate lines of one call, useless to join it. Every
 * log line that names a session goes through here.
 */
export function maskSessionId(sessionId: string): string {
  return `${sessionId.slice(0, 6)}…`;
}
