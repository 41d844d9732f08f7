/**
 * A registry that never reached Redis says so and stops start-up (a wrong REDIS_URL hung the
 * process with no line: the reconnect strategy retries for ever and client errors are swallowed).
 */
import net from 'node:net';
import { describe, expect, it } from 'vitest';
import { openRedisClients } from '../../../shared/registry/redis/clients.js';

describe('first connect to Redis', () => {
  it('fails within its deadline, naming REDIS_URL and the last error', async () => {
    const closed = net.createServer();
    await new Promise<void>((r) => closed.listen(0, '127.0.0.1', () => r()));
    const port = (closed.address() as net.AddressInfo).port;
    await new Promise<void>((r) => closed.close(() => r()));
    const started = Date.now();
    const err = await openRedisClients(`redis://127.0.0.1:${port}`, 300).catch((e: unknown) => e as Error);
    expect(err).toBeInstanceOf(Error);
    expect((err as Error).message).toMatch(/^REDIS_URL: cannot reach Redis within 300 ms \(.*ECONNREFUSED.*\)$/);
    expect(Date.now() - started).toBeLessThan(3000);
  });
});
