/**
 * Signed, short-lived links to per-turn audio (spec rule 5: recordings are served from an
 * unguessable platform path when object storage is not configured).
 *
 * Link: `<PUBLIC_BASE_URL>/api/v1/conversations/audio/<message_id>.ogg?exp=<unix seconds>&sig=<sig>`
 * where `sig` = base64url(HMAC-SHA256(linkKey, "<path>\n<exp>")) and `linkKey` =
 * HMAC-SHA256(jwtKey, "voiceplane:conversation-audio-link:v1"). A fresh link is minted on every
 * read; default lifetime 15 minutes. No bearer is needed to fetch it: the signature is the
 * credential. Bad or expired signature: 403 FORBIDDEN. Valid link but no audio (never recorded,
 * purged by retention, file gone): 404 NOT_FOUND.
 */
import fs from 'node:fs';
import path from 'node:path';
import { createHmac, timingSafeEqual } from 'node:crypto';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { AppError, notFound } from '../../shared/errors.js';
import { isUuid } from '../../shared/ids.js';
import type { Sql } from '../../shared/db/client.js';
import type { NodeReq, NodeRes } from '../http/rest.js';
import { sendError } from './http-util.js';
import { rawRoute, requestUrl } from '../http/request-url.js';

export const AUDIO_PATH_PREFIX = '/api/v1/conversations/audio/';
export const DEFAULT_AUDIO_LINK_TTL_MS = 15 * 60 * 1000;

export interface AudioLinks {
  /** A fresh signed URL for a message's audio. */
  urlFor(messageId: string): string;
  /** Throws FORBIDDEN unless `sig` is valid for the path and `exp` has not passed. */
  verify(pathname: string, exp: string | null, sig: string | null): void;
}

export function createAudioLinks(opts: { jwtKey: Uint8Array; clock: Clock; publicBaseUrl: string; ttlMs?: number }): AudioLinks {
  const key = createHmac('sha256', opts.jwtKey).update('voiceplane:conversation-audio-link:v1').digest();
  const ttlMs = opts.ttlMs ?? DEFAULT_AUDIO_LINK_TTL_MS;
  const sign = (pathname: string, exp: number) => createHmac('sha256', key).update(`${pathname}\n${exp}`).digest();
  return {
    urlFor(messageId) {
      const pathname = `${AUDIO_PATH_PREFIX}${messageId}.ogg`;
      const exp = Math.floor((opts.clock.now() + ttlMs) / 1000);
      return `${opts.publicBaseUrl}${pathname}?exp=${exp}&sig=${sign(pathname, exp).toString('base64url')}`;
    },
    verify(pathname, expText, sig) {
      const denied = () => new AppError('FORBIDDEN', 'invalid or expired audio link');
      if (!expText || !sig || !/^\d{1,12}$/.test(expText)) throw denied();
      const exp = Number(expText);
      const expected = sign(pathname, exp);
      const given = Buffer.from(sig, 'base64url');
      if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw denied();
      if (opts.clock.now() > exp * 1000) throw denied();
    },
  };
}

/** Raw handler for `GET|HEAD /api/v1/conversations/audio/<message_id>.ogg`: streams the file. */
export function createAudioHandler(deps: { sql: Sql; links: AudioLinks; dataDir: string; logger: Logger; clock: Clock }) {
  const root = path.join(deps.dataDir, 'audio');
  return rawRoute((req, url) => (req.method === 'GET' || req.method === 'HEAD') && url.pathname.startsWith(AUDIO_PATH_PREFIX), async (req, res) => {
    const url = requestUrl(req);
    try {
      const name = url.pathname.slice(AUDIO_PATH_PREFIX.length);
      const m = /^([0-9a-fA-F-]{36})\.ogg$/.exec(name);
      deps.links.verify(url.pathname, url.searchParams.get('exp'), url.searchParams.get('sig'));
      if (!m || !isUuid(m[1])) throw notFound('audio');
      const [row] = await deps.sql<{ audio_path: string | null }[]>`select audio_path from messages where id = ${m[1]}`;
      if (!row?.audio_path) throw notFound('audio');
      const abs = path.resolve(root, row.audio_path);
      if (!abs.startsWith(root + path.sep)) throw notFound('audio');
      const st = await fs.promises.stat(abs).catch(() => undefined);
      if (!st?.isFile()) throw notFound('audio');
      const remainingS = Math.max(0, Number(url.searchParams.get('exp')) - Math.floor(deps.clock.now() / 1000));
      res.writeHead(200, {
        'content-type': 'audio/ogg',
        'content-length': String(st.size),
        'cache-control': `private, max-age=${Math.min(remainingS, 900)}`,
      } as never);
      if (req.method === 'HEAD') {
        res.end();
        return true;
      }
      const stream = fs.createReadStream(abs);
      stream.on('error', (err) => {
        deps.logger.warn({ err }, 'audio stream failed');
        (res as { destroy(): void }).destroy();
      });
      stream.pipe(res as NodeJS.WritableStream);
    } catch (err) {
      sendError(res, err, deps.logger);
    }
    return true;
  });
}
