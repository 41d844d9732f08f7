import { createContextKey, type HandlerContext } from '@connectrpc/connect';

/** Request id of the current call (REST and RPC alike), for logs. */
export const kRequestId = createContextKey<string>('', { description: 'request id' });
/** Remote address of the current call, for per-IP rate limits. */
export const kRemoteIp = createContextKey<string>('', { description: 'remote ip' });

export function requestIdOf(ctx: HandlerContext): string {
  return ctx.values.get(kRequestId) || ctx.requestHeader.get('x-request-id') || '';
}

export function remoteIpOf(ctx: HandlerContext): string {
  return ctx.values.get(kRemoteIp) || ctx.requestHeader.get('x-vp-remote-ip') || 'unknown';
}
