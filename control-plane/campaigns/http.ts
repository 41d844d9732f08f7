/**
 * The two campaign routes that are not JSON: `POST /campaigns/{id}/csv-upload` (multipart, field
 * `file`, streamed through busboy into the importer: the 1 MB JSON body limit does not apply,
 * the 10 MB file limit does) and `GET /campaigns/{id}/export` (a CSV attachment written as the
 * cursor yields, respecting the socket's backpressure). Auth and scopes are the RPC methods'
 * (`UploadCampaignCsv`, `ExportCampaignCsv`), through a HandlerContext naming them.
 */
import { once } from 'node:events';
import { createReadStream, createWriteStream } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import type { ServerResponse } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { Transform, type Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import busboy from 'busboy';
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { AppError, invalid } from '../../shared/errors.js';
import { CampaignService } from '../../shared/gen/voiceplane/v1/campaigns_pb.js';
import type { Auth } from '../http/auth.js';
import { successBody } from '../http/envelope.js';
import type { NodeReq, NodeRes } from '../http/rest.js';
import type { Sql } from '../../shared/db/client.js';
import { rawHandlerContext, sendError } from '../conversations/http-util.js';
import { importCsv, MAX_CSV_BYTES } from './csv-import.js';
import { exportCsv } from './csv-export.js';
import { assertUploadable, createCampaignAccess, exportFilename, wakeAfterUpload } from './service.js';
import { requestUrl } from '../http/request-url.js';

export interface CampaignHttpDeps {
  sql: Sql;
  auth: Auth;
  clock: Clock;
  logger: Logger;
  /** `Dialer.wake`: an upload to a running campaign dials its new contacts now. */
  wake: (campaignId: string) => Promise<void>;
}

const UPLOAD = /^\/api\/v1\/campaigns\/([^/]+)\/csv-upload\/?$/;
const EXPORT = /^\/api\/v1\/campaigns\/([^/]+)\/export\/?$/;
/** How long a refused upload is drained before the answer is sent anyway. */
const DRAIN_MS = 10_000;

export function createCampaignRawHandlers(deps: CampaignHttpDeps): Array<(req: NodeReq, res: NodeRes) => false | Promise<boolean>> {
  const access = createCampaignAccess(deps.sql, deps.auth);

  async function upload(req: NodeReq, res: NodeRes, id: string): Promise<void> {
    const ac = new AbortController();
    res.once('close', () => ac.abort());
    try {
      const ctx = rawHandlerContext(req, CampaignService, CampaignService.method.uploadCampaignCsv, ac.signal);
      const row = await access.campaign(ctx, id);
      assertUploadable(row);
      const file = await fileField(req);
      // The upload is spooled to a temporary file first, so the import's transaction (and its pool
      // connection) lasts as long as a local read, never as long as a slow or stalled client.
      const spool = await spoolUpload(req, file.stream);
      try {
        await file.rest;
        const { summary, campaignStatus } = await importCsv(deps.sql, row, createReadStream(spool.file), new Date(deps.clock.now()));
        await wakeAfterUpload(row.id, campaignStatus, deps.wake, deps.logger);
        sendJson(res, 200, successBody('envelope', summary));
      } finally {
        await spool.remove();
      }
    } catch (err) {
      // Read the rest of the body first: answering mid-upload makes clients see a reset, not the 400.
      await drain(req, deps.clock);
      sendError(res, err, deps.logger);
    }
  }

  async function download(req: NodeReq, res: NodeRes, id: string): Promise<void> {
    const ac = new AbortController();
    res.once('close', () => ac.abort());
    try {
      const ctx = rawHandlerContext(req, CampaignService, CampaignService.method.exportCampaignCsv, ac.signal);
      const row = await access.campaign(ctx, id);
      const out = res as ServerResponse;
      out.writeHead(200, { 'content-type': 'text/csv; charset=utf-8', 'content-disposition': `attachment; filename="${exportFilename(row)}"` });
      for await (const chunk of exportCsv(deps.sql, row)) {
        if (ac.signal.aborted) return;
        if (!out.write(chunk)) await once(out, 'drain', { signal: ac.signal });
      }
      out.end();
    } catch (err) {
      if (ac.signal.aborted) return;
      sendError(res, err, deps.logger);
    }
  }

  return [
    (req, res) => {
      const path = requestUrl(req).pathname;
      const up = UPLOAD.exec(path);
      if (up && req.method === 'POST') return upload(req, res, decodeURIComponent(up[1])).then(() => true);
      const ex = EXPORT.exec(path);
      if (ex && req.method === 'GET') return download(req, res, decodeURIComponent(ex[1])).then(() => true);
      return false;
    },
  ];
}

/**
 * The multipart field `file` as a byte stream, and `rest`: settles once the whole body is parsed,
 * rejecting when it held a second file (only the first would be read: a silent loss). busboy stops
 * the file one byte past the limit, so the importer's own count sees 10 MB + 1 and refuses it
 * (FILE_TOO_LARGE) without reading more.
 */
function fileField(req: NodeReq): Promise<{ stream: Readable; rest: Promise<void> }> {
  return new Promise((resolve, reject) => {
    let bb: busboy.Busboy;
    try {
      bb = busboy({ headers: req.headers as Record<string, string>, limits: { files: 1, fileSize: MAX_CSV_BYTES + 1 } });
    } catch {
      reject(invalid('file', 'send the CSV as multipart/form-data in a field named file'));
      return;
    }
    let found = false;
    let extraFile = false;
    const rest = new Promise<void>((done, fail) => {
      bb.on('close', () => (extraFile ? fail(invalid('file', 'send one file per upload: the body holds more than one file part')) : done()));
      bb.on('error', (err) => fail(invalid('file', `malformed multipart body: ${(err as Error).message}`)));
    });
    rest.catch(() => {}); // observed by the caller once the file is spooled
    bb.on('file', (name, stream) => {
      if (name !== 'file' || found) {
        stream.resume();
        return;
      }
      found = true;
      resolve({ stream, rest });
    });
    bb.on('filesLimit', () => (extraFile = true));
    bb.on('error', (err) => reject(invalid('file', `malformed multipart body: ${(err as Error).message}`)));
    bb.on('close', () => {
      if (!found) reject(invalid('file', 'the multipart field file is required'));
    });
    (req as NodeJS.ReadableStream).pipe(bb);
  });
}

/**
 * Writes the file field to a private temporary directory, at most MAX_CSV_BYTES + 1 bytes (the
 * importer then sees the extra byte and answers FILE_TOO_LARGE). A client that goes away
 * mid-upload ends the copy at once (busboy's stream would otherwise wait forever).
 */
async function spoolUpload(req: NodeReq, file: Readable): Promise<{ file: string; remove: () => Promise<void> }> {
  const dir = await mkdtemp(path.join(tmpdir(), 'vp-csv-'));
  const remove = () => rm(dir, { recursive: true, force: true });
  const onClose = () => {
    if (!(req as { complete?: boolean }).complete) file.destroy(new AppError('INVALID_REQUEST', 'the upload was interrupted'));
  };
  req.once('close', onClose);
  let bytes = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _enc, done) {
      bytes += chunk.length;
      // One byte past the limit is enough for the importer to refuse the file.
      if (bytes > MAX_CSV_BYTES + 1) return done();
      done(null, chunk);
    },
  });
  try {
    await pipeline(file, cap, createWriteStream(path.join(dir, 'upload.csv'), { mode: 0o600 }));
    return { file: path.join(dir, 'upload.csv'), remove };
  } catch (err) {
    await remove();
    throw err;
  } finally {
    req.off('close', onClose);
  }
}

async function drain(req: NodeReq, clock: Clock): Promise<void> {
  if (req.readableEnded) return;
  req.unpipe();
  req.resume();
  let timer;
  await Promise.race([once(req, 'end').catch(() => {}), new Promise((r) => (timer = clock.setTimeout(() => r(undefined), DRAIN_MS)))]);
  clock.clearTimeout(timer);
}

function sendJson(res: NodeRes, status: number, body: unknown): void {
  (res as ServerResponse).writeHead(status, { 'content-type': 'application/json; charset=utf-8' });
  res.end(JSON.stringify(body));
}
