/**
 * RPC edge: wraps a service implementation so thrown AppErrors become ConnectErrors with the
 * matching code and the stable envelope code in the error details (gRPC, Connect and gRPC-Web).
 */
import { create, type DescService } from '@bufbuild/protobuf';
import { Code, ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import { codeToString } from '@connectrpc/connect/protocol-connect';
import type { RequestObserver } from './metrics.js';
import { connectCodeFor, toAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { ErrorDetailSchema } from '../../shared/gen/voiceplane/v1/common_pb.js';
import { requestIdOf } from './context.js';
import { assertStorableText } from './input.js';
import { ruleFor } from './scopes.js';

export function toConnectError(err: unknown, logger: Logger, ctx: HandlerContext): ConnectError {
  if (err instanceof ConnectError) return err;
  // The call's deadline passed (Connect aborts the signal with a DeadlineExceeded error as its
  // reason) or the client left: not a server error. Only the second is a cancellation.
  // (connect-node also aborts with ConnectErrors when a client resets its stream: Internal,
  // Aborted ... those stay cancellations, not server errors in the metrics.)
  if (ctx.signal.aborted) {
    const reason: unknown = ctx.signal.reason;
    return reason instanceof ConnectError && reason.code === Code.DeadlineExceeded ? reason : new ConnectError('request cancelled by the client', Code.Canceled);
  }
  const app = toAppError(err);
  if (app.code === 'INTERNAL' && app.options.configured) logger.warn({ requestId: requestIdOf(ctx), reason: app.message }, 'rpc refused by the deployment configuration');
  else if (app.code === 'INTERNAL') logger.error({ err, requestId: requestIdOf(ctx) }, 'rpc failed');
  const detail = create(ErrorDetailSchema, { code: app.code, details: app.details ?? [] });
  // Retry-After travels as response metadata (gRPC trailers / Connect headers), as on REST.
  const meta = app.options.retryAfterS !== undefined ? { 'retry-after': String(app.options.retryAfterS) } : undefined;
  return new ConnectError(app.message, connectCodeFor(app), meta, [{ desc: ErrorDetailSchema, value: detail }]);
}

/** Resolves the call's bearer (and an API key's scope); throws UNAUTHORIZED / FORBIDDEN. */
export type Authenticate = (ctx: HandlerContext) => Promise<unknown>;

/**
 * The credential check of every edge (REST, Connect, gRPC): a service's own `beforeAuth` (the
 * portal's per-address rate limit, which must come first), then `authenticate`.
 */
export function credentialCheck(services: ReadonlyArray<{ service: DescService; beforeAuth?: (ctx: HandlerContext) => void }>, authenticate: Authenticate | undefined): Authenticate | undefined {
  if (!authenticate) return undefined;
  const guards = new Map(services.flatMap((b) => (b.beforeAuth ? [[b.service.typeName, b.beforeAuth] as const] : [])));
  return (ctx) => {
    guards.get(ctx.service.typeName)?.(ctx);
    return authenticate(ctx);
  };
}

/**
 * `authenticate`: run before the handler on every method that is not `public` (http/scopes.ts).
 * `observe`: each call's duration with its Connect code (REST calls the implementations directly
 * and is measured at the HTTP edge instead, so nothing is counted twice).
 */
export function wrapImpl<S extends DescService>(service: S, impl: ServiceImpl<S>, logger: Logger, observe?: RequestObserver, authenticate?: Authenticate): ServiceImpl<S> {
  const out: Record<string, unknown> = {};
  for (const m of service.methods) {
    const fn = (impl as Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>>)[m.localName];
    if (typeof fn !== 'function') throw new Error(`${service.typeName} implementation lacks ${m.localName}`);
    const route = `/${service.typeName}/${m.name}`;
    const check = authenticate && ruleFor(service.typeName, m.name) !== 'public' ? authenticate : undefined;
    out[m.localName] = async (req: unknown, ctx: HandlerContext) => {
      const started = performance.now();
      let code = 'ok';
      try {
        // The credential before the handler's own field checks, as on REST (rest.ts).
        if (check) await check(ctx);
        assertStorableText(m.input, req);
        return await fn.call(impl, req, ctx);
      } catch (err) {
        const ce = toConnectError(err, logger, ctx);
        code = codeToString(ce.code);
        throw ce;
      } finally {
        observe?.({ protocol: ctx.protocolName.replace(/-/g, '_'), method: ctx.requestMethod, route, code, seconds: (performance.now() - started) / 1000 });
      }
    };
  }
  return out as ServiceImpl<S>;
}
