import type { Clock } from '../clock.js';
import type { Logger } from '../logger.js';
import { MemoryRegistry } from './memory/index.js';
import { RedisRegistry } from './redis/index.js';
import type { Registry } from './types.js';

export * from './types.js';
export { MemoryRegistry, RedisRegistry };

/** Redis when a URL is configured, else the in-process registry (single node only). */
export async function createRegistry(opts: { redisUrl?: string; prefix?: string; clock?: Clock; commandTimeoutMs?: number; logger?: Logger }): Promise<Registry> {
  if (opts.redisUrl) return RedisRegistry.connect({ url: opts.redisUrl, prefix: opts.prefix, clock: opts.clock, commandTimeoutMs: opts.commandTimeoutMs, logger: opts.logger });
  return new MemoryRegistry(opts.clock);
}
