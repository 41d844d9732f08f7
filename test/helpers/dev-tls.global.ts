/**
 * vitest global setup (runs once, in the main process, before any test worker is forked): a
 * self-signed certificate for `localhost` / `127.0.0.1`, and the CA bundle that vitest.config.ts
 * points NODE_EXTRA_CA_CERTS at (this certificate plus whatever NODE_EXTRA_CA_CERTS named before).
 * Every worker then trusts local https webhook receivers, the development setting the README
 * describes. `test/helpers/tls.ts` hands the key and certificate to test servers.
 */
import { execFile } from 'node:child_process';
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';

export const DEV_TLS_DIR = path.join(os.tmpdir(), 'voiceplane-test-tls');
export const DEV_CA_BUNDLE = path.join(DEV_TLS_DIR, 'bundle.pem');

export default async function setup(): Promise<void> {
  const key = path.join(DEV_TLS_DIR, 'key.pem');
  const cert = path.join(DEV_TLS_DIR, 'cert.pem');
  const exists = await fs.access(cert).then(
    () => true,
    () => false,
  );
  if (!exists) {
    await fs.mkdir(DEV_TLS_DIR, { recursive: true });
    // Written under temporary names and renamed: two runs starting together never read half a file.
    const tmp = path.join(DEV_TLS_DIR, String(process.pid));
    await promisify(execFile)('openssl', [
      'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '3650', '-subj', '/CN=localhost',
      '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1',
      '-keyout', `${tmp}-key.pem`, '-out', `${tmp}-cert.pem`,
    ]);
    await fs.rename(`${tmp}-key.pem`, key);
    await fs.rename(`${tmp}-cert.pem`, cert);
  }
  const previous = process.env.VOICEPLANE_PREVIOUS_EXTRA_CA_CERTS;
  const extra = previous ? await fs.readFile(previous, 'utf8').catch(() => '') : '';
  const tmpBundle = `${DEV_CA_BUNDLE}.${process.pid}`;
  await fs.writeFile(tmpBundle, `${await fs.readFile(cert, 'utf8')}\n${extra}`);
  await fs.rename(tmpBundle, DEV_CA_BUNDLE);
}
