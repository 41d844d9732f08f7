/** The portal's request timeout (spec doc 3 "Limits": 30 seconds). */
import type { ServiceImpl } from '@connectrpc/connect';
import type { PortalService } from '../../shared/gen/voiceplane/v1/portal_pb.js';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import { AppError } from '../../shared/errors.js';

/** Spec doc 3 "Limits": portal request timeout. */
export const PORTAL_REQUEST_TIMEOUT_MS = 30_000;

/**
 * Every method answers within `ms` or fails 503 (the spec's portal request timeout). The work
 * already started (a database statement) runs to its end; only the answer is given up.
 */
export function withTimeout(impl: ServiceImpl<typeof PortalService>, clock: Clock, ms: number): ServiceImpl<typeof PortalService> {
  const out: Record<string, unknown> = {};
  for (const [name, fn] of Object.entries(impl as Record<string, (req: unknown, ctx: unknown) => Promise<unknown>>)) {
    out[name] = (req: unknown, ctx: unknown) => {
      let timer: TimerHandle | undefined;
      const timeout = new Promise<never>((_, reject) => {
        timer = clock.setTimeout(() => reject(new AppError('SERVICE_UNAVAILABLE', `the portal did not answer within ${ms / 1000} s`, { retryAfterS: 1 })), ms);
      });
      return Promise.race([fn(req, ctx), timeout]).finally(() => clock.clearTimeout(timer));
    };
  }
  return out as ServiceImpl<typeof PortalService>;
}
