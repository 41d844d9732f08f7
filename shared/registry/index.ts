import type { Clock } from '../clock.js';
import { MemoryRegistry } from './memory.js';
import { RedisRegistry } from './redis.js';
import type { SessionRegistry } from './types.js';

export * from './types.js';
export { MemoryRegistry, RedisRegistry };

/** Redis when a URL is configured, else the in-process registry (single node only). */
export async function createRegistry(opts: { redisUrl?: string; prefix?: string; clock?: Clock }): Promise<SessionRegistry> {
  if (opts.redisUrl) return RedisRegistry.connect({ url: opts.redisUrl, prefix: opts.prefix, clock: opts.clock });
  return new MemoryRegistry(opts.clock);
}
