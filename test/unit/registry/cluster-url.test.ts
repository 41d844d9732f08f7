/** REDIS_URL for Redis Cluster: `redis+cluster://[user:password@]host:port[,host:port...]`. */
import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { parseClusterUrl } from '../../../shared/registry/redis/clients.js';

describe('REDIS_URL for Redis Cluster', () => {
  it('parses seed nodes, credentials and TLS', () => {
    expect(parseClusterUrl('redis+cluster://r1.example:7000,10.0.0.2:7001,[::1]:7002')).toEqual({
      nodes: [
        { host: 'r1.example', port: 7000 },
        { host: '10.0.0.2', port: 7001 },
        { host: '::1', port: 7002 },
      ],
      username: undefined,
      password: undefined,
      tls: false,
    });
    expect(parseClusterUrl('rediss+cluster://app:p%40ss@h:7000/')).toMatchObject({ username: 'app', password: 'p@ss', tls: true, nodes: [{ host: 'h', port: 7000 }] });
  });

  it.each([
    ['redis+cluster://h', /host:port/],
    ['redis+cluster://h:0', /host:port/],
    ['redis+cluster://h:1,,h:2', /nodes/],
    ['redis+cluster://h:1/0', /no path/],
    ['redis+cluster://h:1?db=2', /no options/],
    ['redis+cluster://', /nodes|host:port/],
  ])('refuses %s', (url, message) => {
    expect(() => parseClusterUrl(url)).toThrow(message);
  });

  it('is accepted by the configuration, and a broken one is refused naming REDIS_URL without its password', () => {
    expect(loadConfig({ REDIS_URL: 'redis+cluster://h1:7000,h2:7000' }).redisUrl).toBe('redis+cluster://h1:7000,h2:7000');
    let message = '';
    try {
      loadConfig({ REDIS_URL: 'redis+cluster://:hunter2@h1' });
    } catch (e) {
      message = (e as Error).message;
    }
    expect(message).toMatch(/REDIS_URL.*Cluster/);
    expect(message).not.toContain('hunter2');
  });
});
