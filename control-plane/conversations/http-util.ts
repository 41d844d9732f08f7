/** Small helpers for the domain's raw handlers (signed audio links, SSE): envelope errors, auth context. */
import { createContextValues, createHandlerContext, type HandlerContext } from '@connectrpc/connect';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import type { Logger } from '../../shared/logger.js';
import { AppError, toAppError } from '../../shared/errors.js';
import { errorBody } from '../http/envelope.js';
import { kRemoteIp, kRequestId } from '../http/context.js';
import type { NodeReq, NodeRes } from '../http/rest.js';

/** Writes an error in the envelope family (`/conversations/*`); INTERNAL errors are logged. */
export function sendError(res: NodeRes, err: unknown, logger: Logger): void {
  const app = toAppError(err);
  if (app.code === 'INTERNAL') logger.error({ err }, 'conversations raw handler failed');
  if (res.headersSent) {
    res.end();
    return;
  }
  const headers: Record<string, string> = { 'content-type': 'application/json; charset=utf-8' };
  if (app.options.retryAfterS !== undefined) headers['retry-after'] = String(app.options.retryAfterS);
  (res as import('node:http').ServerResponse).writeHead(app.status, headers);
  res.end(JSON.stringify(errorBody('envelope', app)));
}

/** A HandlerContext for a raw request, so `Auth.principal(ctx)` works exactly as on REST routes. */
export function rawHandlerContext(req: NodeReq, service: DescService, method: DescMethod, signal: AbortSignal): HandlerContext {
  const headers = new Headers();
  for (const [k, v] of Object.entries(req.headers)) {
    if (k.startsWith(':') || v === undefined) continue;
    headers.set(k, Array.isArray(v) ? v.join(', ') : String(v));
  }
  return createHandlerContext({
    service,
    method,
    protocolName: 'sse',
    requestMethod: req.method ?? 'GET',
    url: `http://localhost${req.url ?? '/'}`,
    requestHeader: headers,
    requestSignal: signal,
    contextValues: createContextValues()
      .set(kRequestId, String(req.headers['x-request-id'] ?? ''))
      .set(kRemoteIp, String(req.headers['x-vp-remote-ip'] ?? '')),
  });
}

/**
 * Admission of long-lived streams (SSE): at most `maxStreams` in the process (beyond: 503) and
 * `maxPerUser` per user (beyond: 429), both with `Retry-After`, so one user cannot take every slot.
 * `admit` counts before the caller's next await (a burst cannot all pass the check together) and
 * returns an idempotent release.
 */
export function streamAdmission(what: string, maxStreams: number, maxPerUser: number) {
  let admitted = 0;
  const perUser = new Map<string, number>();
  return {
    /** Streams admitted: being set up or open. */
    get admitted(): number {
      return admitted;
    },
    admit(userId: string): () => void {
      if (admitted >= maxStreams) throw new AppError('SERVICE_UNAVAILABLE', `too many ${what} streams`, { retryAfterS: 5 });
      const mine = perUser.get(userId) ?? 0;
      if (mine >= maxPerUser) throw new AppError('RATE_LIMITED', `at most ${maxPerUser} ${what} streams per user at once`, { retryAfterS: 5 });
      admitted++;
      perUser.set(userId, mine + 1);
      let released = false;
      return () => {
        if (released) return;
        released = true;
        admitted--;
        const left = (perUser.get(userId) ?? 1) - 1;
        if (left > 0) perUser.set(userId, left);
        else perUser.delete(userId);
      };
    },
  };
}
