import type { ServiceImpl } from '@connectrpc/connect';
import { HealthService } from '../../shared/gen/voiceplane/v1/health_pb.js';
import type { Sql } from '../db/client.js';
import type { SessionRegistry } from '../../shared/registry/index.js';
import { AppError } from '../../shared/errors.js';

export const VERSION = '0.1.0';

export function createHealthService(deps: { sql: Sql; registry: SessionRegistry }): ServiceImpl<typeof HealthService> {
  return {
    live() {
      return { status: 'ok', service: 'control-plane', version: VERSION, checks: {} };
    },
    async ready() {
      const checks: Record<string, string> = {};
      try {
        await withTimeout(deps.sql`select 1`, 2000);
        checks.database = 'ok';
      } catch (e) {
        checks.database = `unavailable: ${(e as Error).message}`;
      }
      try {
        await withTimeout(deps.registry.listNodes(), 2000);
        checks.registry = 'ok';
      } catch (e) {
        checks.registry = `unavailable: ${(e as Error).message}`;
      }
      const ok = Object.values(checks).every((v) => v === 'ok');
      if (!ok) throw new AppError('SERVICE_UNAVAILABLE', `not ready: ${JSON.stringify(checks)}`);
      return { status: 'ok', service: 'control-plane', version: VERSION, checks };
    },
  };
}

function withTimeout<T>(p: PromiseLike<T>, ms: number): Promise<T> {
  return new Promise<T>((resolve, reject) => {
    const t = setTimeout(() => reject(new Error(`timed out after ${ms} ms`)), ms);
    Promise.resolve(p).then(
      (v) => (clearTimeout(t), resolve(v)),
      (e) => (clearTimeout(t), reject(e)),
    );
  });
}
