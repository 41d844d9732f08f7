/**
 * The web console (issue 22), served by the control plane itself: `GET /`, `/console` and
 * `/console/<asset>`. The bundle (console/build.mjs -> dist/console) is read once at start, and only
 * the files its manifest.json lists are answered, by exact name: a request path is never joined
 * onto a directory, so there is no traversal to guard against. Hashed assets are immutable; the
 * page itself is revalidated every time. The page talks only to this origin and to voice sockets.
 */
import { createHash } from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NodeReq, NodeRes } from '../http/rest.js';

const TYPES: Record<string, string> = {
  '.html': 'text/html; charset=utf-8',
  '.js': 'text/javascript; charset=utf-8',
  '.css': 'text/css; charset=utf-8',
};
/** Longest asset name accepted before looking it up (names are `<stem>-<10 hex>.<ext>`). */
const MAX_NAME = 100;

/** dist/control-plane/console/serve.js -> dist/console (where `npm run build` writes the bundle). */
export const DEFAULT_CONSOLE_DIR = fileURLToPath(new URL('../../console/', import.meta.url));

interface Asset {
  body: Buffer;
  type: string;
  etag: string;
  immutable: boolean;
}

export interface ConsoleOptions {
  /** Directory holding manifest.json and the files it lists. */
  dir: string;
  /** PUBLIC_BASE_URL: per-turn audio links point there (the page plays them). */
  publicBaseUrl: string;
}

export type ConsoleHandler = (req: NodeReq, res: NodeRes) => boolean;

/** The built console is in `dir` (what the handler serves; otherwise it answers 503). */
export function consoleBuilt(dir: string = DEFAULT_CONSOLE_DIR): boolean {
  return loadAssets(dir) !== undefined;
}

function loadAssets(dir: string): Map<string, Asset> | undefined {
  let manifest: { index?: unknown; files?: unknown };
  try {
    manifest = JSON.parse(fs.readFileSync(path.join(dir, 'manifest.json'), 'utf8')) as typeof manifest;
  } catch {
    return undefined;
  }
  if (!Array.isArray(manifest.files)) return undefined;
  const assets = new Map<string, Asset>();
  for (const name of manifest.files) {
    // The manifest is ours, but only plain names with a known type are ever served.
    if (typeof name !== 'string' || name !== path.basename(name) || !TYPES[path.extname(name)]) continue;
    const body = fs.readFileSync(path.join(dir, name));
    const etag = `"${createHash('sha256').update(body).digest('base64url').slice(0, 22)}"`;
    assets.set(name, { body, type: TYPES[path.extname(name)]!, etag, immutable: name !== 'index.html' });
  }
  return assets.has('index.html') ? assets : undefined;
}

/** Content-Security-Policy of the page: our scripts only, sockets to any engine node, audio from the API. */
export function consoleCsp(publicBaseUrl: string): string {
  let audioOrigin = '';
  try {
    audioOrigin = ` ${new URL(publicBaseUrl).origin}`;
  } catch {
    // validated by config
  }
  return [
    "default-src 'none'",
    "script-src 'self'",
    "style-src 'self'",
    "img-src 'self' data:",
    // Engine nodes have their own host/port (ENGINE_PUBLIC_URL, one per node): any ws/wss origin.
    "connect-src 'self' ws: wss:",
    `media-src 'self' blob:${audioOrigin}`,
    "base-uri 'none'",
    "form-action 'none'",
    "frame-ancestors 'none'",
  ].join('; ');
}

export function createConsoleHandler(opts: ConsoleOptions): ConsoleHandler {
  const assets = loadAssets(opts.dir);
  const csp = consoleCsp(opts.publicBaseUrl);
  return (req, res) => {
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    const p = q >= 0 ? url.slice(0, q) : url;
    let name: string;
    if (p === '/' || p === '/console' || p === '/console/') name = 'index.html';
    else if (p.startsWith('/console/')) name = p.slice('/console/'.length);
    else return false;
    const common = { 'x-content-type-options': 'nosniff', 'referrer-policy': 'no-referrer', 'x-frame-options': 'DENY', 'content-security-policy': csp };
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { ...common, allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return true;
    }
    if (!assets) {
      res.writeHead(503, { ...common, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end('The console is not built: run `npm run build` (it writes dist/console).\n');
      return true;
    }
    const asset = name.length <= MAX_NAME ? assets.get(name) : undefined;
    if (!asset) {
      res.writeHead(404, { ...common, 'content-type': 'text/plain; charset=utf-8', 'cache-control': 'no-store' }).end('not found\n');
      return true;
    }
    const headers = {
      ...common,
      'content-type': asset.type,
      etag: asset.etag,
      'cache-control': asset.immutable ? 'public, max-age=31536000, immutable' : 'no-cache',
    };
    if (req.headers['if-none-match'] === asset.etag) {
      res.writeHead(304, headers).end();
      return true;
    }
    res.writeHead(200, { ...headers, 'content-length': String(asset.body.length) });
    if (req.method === 'HEAD') res.end();
    else res.end(asset.body);
    return true;
  };
}
