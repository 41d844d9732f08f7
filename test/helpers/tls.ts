/**
 * The development TLS pair made by `dev-tls.global.ts` (trusted by every test worker through
 * NODE_EXTRA_CA_CERTS): for https servers that stand in for a customer's receiver.
 */
import fs from 'node:fs';
import path from 'node:path';
import { DEV_CA_BUNDLE, DEV_TLS_DIR } from './dev-tls.global.js';

export function devTls(): { key: Buffer; cert: Buffer } {
  return { key: fs.readFileSync(path.join(DEV_TLS_DIR, 'key.pem')), cert: fs.readFileSync(path.join(DEV_TLS_DIR, 'cert.pem')) };
}

/** Whether this worker was started with the development certificate trusted. */
export function devTlsTrusted(): boolean {
  return process.env.NODE_EXTRA_CA_CERTS === DEV_CA_BUNDLE;
}
