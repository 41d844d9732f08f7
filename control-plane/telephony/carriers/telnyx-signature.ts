/**
 * Telnyx webhook signatures (API v2): `telnyx-signature-ed25519` is the base64 Ed25519 signature
 * of `${telnyx-timestamp}|${raw body}` under the account's public key (portal: Keys & Credentials,
 * "Public Key", base64 of the raw 32 bytes). A timestamp more than 5 minutes away is refused
 * (replays). Node's crypto verifies Ed25519 once the raw key is wrapped in its SPKI DER header.
 */
import { createPublicKey, sign as edSign, verify as edVerify, type KeyObject } from 'node:crypto';

/** SPKI DER prefix of an Ed25519 public key (RFC 8410): the raw 32 bytes follow. */
const SPKI_PREFIX = Buffer.from('302a300506032b6570032100', 'hex');
export const TIMESTAMP_TOLERANCE_S = 300;

const keys = new Map<string, KeyObject | null>();

function publicKey(b64: string): KeyObject | null {
  let k = keys.get(b64);
  if (k !== undefined) return k;
  const raw = Buffer.from(b64, 'base64');
  try {
    k = raw.length === 32 ? createPublicKey({ key: Buffer.concat([SPKI_PREFIX, raw]), format: 'der', type: 'spki' }) : null;
  } catch {
    k = null;
  }
  // Bounded: a deployment has a handful of keys; a flood of distinct keys only re-parses.
  if (keys.size > 256) keys.clear();
  keys.set(b64, k);
  return k;
}

export function verifyTelnyxSignature(publicKeyB64: string, rawBody: string, signature: string | null, timestamp: string | null, nowS: number): boolean {
  if (!signature || !timestamp || !/^\d{1,12}$/.test(timestamp)) return false;
  if (Math.abs(nowS - Number(timestamp)) > TIMESTAMP_TOLERANCE_S) return false;
  const key = publicKey(publicKeyB64);
  const sig = Buffer.from(signature, 'base64');
  if (!key || sig.length !== 64) return false;
  return edVerify(null, Buffer.from(`${timestamp}|${rawBody}`, 'utf8'), key, sig);
}

/** Signs like Telnyx does (the carrier simulator and tests). */
export function signTelnyx(privateKey: KeyObject, rawBody: string, timestamp: string): string {
  return edSign(null, Buffer.from(`${timestamp}|${rawBody}`, 'utf8'), privateKey).toString('base64');
}
