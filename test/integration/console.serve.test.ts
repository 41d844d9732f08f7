/**
 * How the control plane serves the web console (control-plane/console/serve.ts): the bundle that
 * console/build.mjs writes, with content types, caching (immutable hashed assets, revalidated
 * page, ETag/304), the CSP, only manifest-listed names (no traversal), 405 for other methods and
 * 503 before a build. Through the real one-port server, next to the API it must not shadow.
 */
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlaneServer, type RunningServer } from '../../control-plane/http/server.js';
import { consoleBuilt, createConsoleHandler } from '../../control-plane/console/serve.js';
import { captureLogger } from '../helpers/infra.js';
// @ts-expect-error plain ESM build script without types
import { buildConsole } from '../../console/build.mjs';

let tmp: string;
let server: RunningServer;
let unbuilt: RunningServer;
let manifest: { files: string[] };
const PUBLIC = 'https://voice.example.com';

async function start(dir: string): Promise<RunningServer> {
  return startControlPlaneServer({
    port: 0,
    host: '127.0.0.1',
    services: [],
    routes: [],
    logger: captureLogger().logger,
    maxBodyBytes: 1024,
    rawHandlers: [(req, res) => (req.url === '/api/v1/ping' ? (res.writeHead(200).end('pong'), true) : false)],
    console: createConsoleHandler({ dir, publicBaseUrl: PUBLIC }),
  });
}

beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'vp-console-serve-'));
  manifest = (await buildConsole(path.join(tmp, 'console'))) as { files: string[] };
  // A file next to the bundle that is not in the manifest, and one outside it.
  fs.writeFileSync(path.join(tmp, 'console', 'secret.js'), 'nope');
  fs.writeFileSync(path.join(tmp, 'outside.txt'), 'nope');
  server = await start(path.join(tmp, 'console'));
  unbuilt = await start(path.join(tmp, 'missing'));
});

afterAll(async () => {
  await server?.close();
  await unbuilt?.close();
  fs.rmSync(tmp, { recursive: true, force: true });
});

const url = (s: RunningServer, p: string) => `http://127.0.0.1:${s.port}${p}`;

/** Raw request line (fetch normalizes `..` away; a real attacker does not). */
function rawGet(port: number, target: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const sock = net.connect(port, '127.0.0.1', () => sock.end(`GET ${target} HTTP/1.1\r\nhost: x\r\nconnection: close\r\n\r\n`));
    let out = '';
    sock.on('data', (d) => (out += d.toString('latin1')));
    sock.on('end', () => resolve(out.split('\r\n')[0]!));
    sock.on('error', reject);
  });
}

describe('console pages', () => {
  it('serves the page at /, /console and /console/ with a CSP and revalidation', async () => {
    for (const p of ['/', '/console', '/console/', '/console?x=1']) {
      const res = await fetch(url(server, p));
      expect(res.status, p).toBe(200);
      expect(res.headers.get('content-type')).toBe('text/html; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('no-cache');
      expect(res.headers.get('x-content-type-options')).toBe('nosniff');
      const csp = res.headers.get('content-security-policy')!;
      expect(csp).toContain("default-src 'none'");
      expect(csp).toContain("script-src 'self'");
      expect(csp).toContain("connect-src 'self' ws: wss:");
      expect(csp).toContain(`media-src 'self' blob: ${PUBLIC}`);
      expect(csp).toContain("frame-ancestors 'none'");
      const html = await res.text();
      const app = manifest.files.find((f) => f.startsWith('app-'))!;
      expect(html).toContain(`/console/${app}`);
    }
  });

  it('serves hashed assets as immutable, with their content type, ETag and 304', async () => {
    for (const name of manifest.files.filter((f) => f !== 'index.html')) {
      const res = await fetch(url(server, `/console/${name}`));
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toBe(name.endsWith('.css') ? 'text/css; charset=utf-8' : 'text/javascript; charset=utf-8');
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(Number(res.headers.get('content-length'))).toBe((await res.arrayBuffer()).byteLength);
      const again = await fetch(url(server, `/console/${name}`), { headers: { 'if-none-match': res.headers.get('etag')! } });
      expect(again.status).toBe(304);
    }
    const head = await fetch(url(server, '/console/'), { method: 'HEAD' });
    expect(head.status).toBe(200);
    expect(await head.text()).toBe('');
  });

  it('answers only manifest names: unlisted files, traversal and encoded paths are 404', async () => {
    for (const p of ['/console/secret.js', '/console/manifest.json', '/console/nope.js', '/console/%2e%2e/outside.txt', `/console/${'a'.repeat(500)}.js`]) {
      expect((await fetch(url(server, p))).status, p).toBe(404);
    }
    for (const target of ['/console/../outside.txt', '/console/..%2foutside.txt', '/console/../../etc/passwd']) {
      expect(await rawGet(server.port, target), target).toMatch(/^HTTP\/1\.1 404/);
    }
  });

  it('refuses other methods with 405 and leaves the API alone', async () => {
    const res = await fetch(url(server, '/console/'), { method: 'POST', body: 'x' });
    expect(res.status).toBe(405);
    expect(res.headers.get('allow')).toBe('GET, HEAD');
    expect(await (await fetch(url(server, '/api/v1/ping'))).text()).toBe('pong');
  });

  it('says how to build when the bundle is missing (503), without crashing', async () => {
    const res = await fetch(url(unbuilt, '/console'));
    expect(res.status).toBe(503);
    expect(await res.text()).toContain('npm run build');
    // The start banner asks the same question before printing the console's address.
    expect([consoleBuilt(path.join(tmp, 'missing')), consoleBuilt(path.join(tmp, 'console'))]).toEqual([false, true]);
  });
});
