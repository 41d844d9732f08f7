/**
 * The call recording proxy (spec doc 3, `call.completed` `recordings[].url`: "proxy links",
 * re-authenticated): `GET /api/v1/conversations/{id}/recordings/{recording_id}`, bearer required
 * (the organization key, or a member of the conversation's workspace; another workspace's id is
 * 404). The recording stays at the carrier: each request downloads it with the call's agent's
 * carrier account through telephony (the carrier's recording hosts only, through the outbound
 * client, bounded in size) and answers its bytes. Nothing is stored here.
 */
import { AppError, notFound } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { ConversationService } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import type { Auth } from '../http/auth.js';
import { rawRoute, requestUrl } from '../http/request-url.js';
import { pathId } from '../http/validate.js';
import { rawHandlerContext, sendError } from './http-util.js';
import { getConversation } from './store.js';

/** What telephony needs to download a recording (its RecordingRef). */
export interface RecordingDownload {
  agentId: string;
  carrier: string;
  url: string;
}

/** Telephony's download; throws an error with `retryable` when the carrier failed. */
export type FetchRecording = (ref: RecordingDownload, signal?: AbortSignal) => Promise<Uint8Array>;

const RECORDING_PATH = /^\/api\/v1\/conversations\/([^/]+)\/recordings\/([^/]+)\/?$/;
/** Carrier recording ids are short tokens (`RE` + 32 hex, UUIDs); anything longer is not one. */
const MAX_RECORDING_ID_CHARS = 128;

/** The path of a conversation's recording (the webhook's `recordings[].url` under the public base). */
export function recordingPath(conversationId: string, recordingId: string): string {
  return `/api/v1/conversations/${conversationId}/recordings/${encodeURIComponent(recordingId)}`;
}

/** The audio type from the first bytes (carriers answer WAV or MP3; Vonage and Telnyx MP3 or WAV). */
function contentType(bytes: Uint8Array): string {
  const head = Buffer.from(bytes.subarray(0, 4)).toString('latin1');
  if (head === 'RIFF') return 'audio/wav';
  if (head === 'OggS') return 'audio/ogg';
  if (head.startsWith('ID3') || (bytes[0] === 0xff && ((bytes[1] ?? 0) & 0xe0) === 0xe0)) return 'audio/mpeg';
  return 'application/octet-stream';
}

export function createRecordingHandler(deps: { sql: Sql; auth: Auth; logger: Logger; fetchRecording: FetchRecording }) {
  const method = ConversationService.method.getConversation;
  return rawRoute((req, url) => (req.method === 'GET' || req.method === 'HEAD') && RECORDING_PATH.test(url.pathname), async (req, res) => {
    const m = RECORDING_PATH.exec(requestUrl(req).pathname)!;
    const ac = new AbortController();
    res.once('close', () => ac.abort());
    try {
      const ctx = rawHandlerContext(req, ConversationService, method, ac.signal);
      const p = await deps.auth.principal(ctx);
      const conv = await getConversation(deps.sql, await deps.auth.workspaceIds(p), pathId('conversation', m[1]));
      if (!conv) throw notFound('conversation');
      let recordingId = '';
      try {
        recordingId = decodeURIComponent(m[2]!);
      } catch {
        // not a recording id of ours
      }
      const meta = (conv.metadata ?? {}) as Record<string, unknown>;
      // The call's recording, or the leg a cold transfer dialed (call.completed lists both).
      const named = meta.recording_sid === recordingId ? meta.recording_url : meta.transfer_recording_sid === recordingId ? meta.transfer_recording_url : undefined;
      const url = typeof named === 'string' ? named : '';
      const carrier = typeof meta.telephony_provider === 'string' ? meta.telephony_provider : '';
      if (!recordingId || recordingId.length > MAX_RECORDING_ID_CHARS || !url || !carrier || !conv.agent_id) throw notFound('recording');
      let bytes: Uint8Array;
      try {
        bytes = await deps.fetchRecording({ agentId: conv.agent_id, carrier, url }, ac.signal);
      } catch (err) {
        if (ac.signal.aborted) return true;
        const retryable = (err as { retryable?: unknown }).retryable === true;
        deps.logger.warn({ conversationId: conv.id, carrier, err: (err as Error).message }, 'call recording not fetched from the carrier');
        throw new AppError(retryable ? 'SERVICE_UNAVAILABLE' : 'BAD_GATEWAY', `the carrier's recording could not be fetched: ${(err as Error).message}`, retryable ? { retryAfterS: 5 } : {});
      }
      res.writeHead(200, { 'content-type': contentType(bytes), 'content-length': String(bytes.length), 'cache-control': 'private, no-store' } as never);
      if (req.method === 'HEAD') res.end();
      else res.end(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    } catch (err) {
      sendError(res, err, deps.logger);
    }
    return true;
  });
}
