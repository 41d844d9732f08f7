/** Deletes every Redis key under a bench's prefix (benches clean up after themselves). */
import { createClient } from 'redis';

export async function dropRedisPrefix(url: string, prefix: string): Promise<number> {
  if (!prefix || prefix.length < 4) throw new Error(`refusing to drop a short Redis prefix "${prefix}"`);
  const client = createClient({ url });
  client.on('error', () => {});
  await client.connect();
  let n = 0;
  try {
    for await (const batch of client.scanIterator({ MATCH: `${prefix}:*`, COUNT: 500 })) {
      const keys = (Array.isArray(batch) ? batch : [batch]) as string[];
      if (keys.length) n += await client.del(keys);
    }
  } finally {
    await client.quit();
  }
  return n;
}
