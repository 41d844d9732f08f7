/** Small helpers for the domain's raw handlers (signed audio links, SSE): envelope errors, auth context. */
import { createContextValues, createHandlerContext, type HandlerContext } from '@connectrpc/connect';
import type { DescMethod, DescService } from '@bufbuild/protobuf';
import type { Logger } from '../../shared/logger.js';
import { toAppError } from '../../shared/errors.js';
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
  (res as import('node:http').ServerResponse).writeHead(app.status, { 'content-type': 'application/json; charset=utf-8' });
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
