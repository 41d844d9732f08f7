/**
 * RPC edge: wraps a service implementation so thrown AppErrors become ConnectErrors with the
 * matching code and the stable envelope code in the error details (gRPC, Connect and gRPC-Web).
 */
import { create, type DescService } from '@bufbuild/protobuf';
import { ConnectError, type HandlerContext, type ServiceImpl } from '@connectrpc/connect';
import { connectCodeFor, toAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { ErrorDetailSchema } from '../../shared/gen/voiceplane/v1/common_pb.js';
import { requestIdOf } from './context.js';

export function toConnectError(err: unknown, logger: Logger, ctx: HandlerContext): ConnectError {
  if (err instanceof ConnectError) return err;
  const app = toAppError(err);
  if (app.code === 'INTERNAL') logger.error({ err: (err as Error)?.stack ?? String(err), requestId: requestIdOf(ctx) }, 'rpc failed');
  const detail = create(ErrorDetailSchema, { code: app.code, details: app.details ?? [] });
  return new ConnectError(app.message, connectCodeFor(app), undefined, [{ desc: ErrorDetailSchema, value: detail }]);
}

export function wrapImpl<S extends DescService>(service: S, impl: ServiceImpl<S>, logger: Logger): ServiceImpl<S> {
  const out: Record<string, unknown> = {};
  for (const m of service.methods) {
    const fn = (impl as Record<string, (req: unknown, ctx: HandlerContext) => Promise<unknown>>)[m.localName];
    if (typeof fn !== 'function') throw new Error(`${service.typeName} implementation lacks ${m.localName}`);
    out[m.localName] = async (req: unknown, ctx: HandlerContext) => {
      try {
        return await fn.call(impl, req, ctx);
      } catch (err) {
        throw toConnectError(err, logger, ctx);
      }
    };
  }
  return out as ServiceImpl<S>;
}
