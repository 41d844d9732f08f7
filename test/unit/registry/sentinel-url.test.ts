import { describe, expect, it } from 'vitest';
import { loadConfig } from '../../../shared/config.js';
import { parseSentinelUrl } from '../../../shared/registry/redis/clients.js';

describe('REDIS_URL for Redis Sentinel', () => {
  it('parses sentinels, master name, credentials, db and TLS', () => {
    expect(parseSentinelUrl('redis+sentinel://s1.example:26379,10.0.0.2:26380,[::1]:26381/mymaster')).toEqual({
      name: 'mymaster',
      sentinels: [
        { host: 's1.example', port: 26379 },
        { host: '10.0.0.2', port: 26380 },
        { host: '::1', port: 26381 },
      ],
      username: undefined,
      password: undefined,
      database: undefined,
      tls: false,
    });
    expect(parseSentinelUrl('rediss+sentinel://app:p%40ss@h:26379/m-1?db=2')).toMatchObject({ username: 'app', password: 'p@ss', database: 2, tls: true, name: 'm-1' });
    expect(parseSentinelUrl('redis+sentinel://:secret@h:26379/m')).toMatchObject({ username: undefined, password: 'secret' });
  });

  it.each([
    ['redis+sentinel://h:26379', /master/],
    ['redis+sentinel://h:26379/', /master name/],
    ['redis+sentinel://h/m', /host:port/],
    ['redis+sentinel://h:0/m', /host:port/],
    ['redis+sentinel://h:70000/m', /host:port/],
    ['redis+sentinel://h:1,,h:2/m', /sentinels/],
    ['redis+sentinel://h:1/m?db=x', /db/],
    ['redis+sentinel://h:1/a b', /master name/],
  ])('refuses %s', (url, message) => {
    expect(() => parseSentinelUrl(url)).toThrow(message);
  });

  it('is accepted by the configuration, and a broken one is refused naming REDIS_URL without its password', () => {
    expect(loadConfig({ REDIS_URL: 'redis+sentinel://h1:26379,h2:26379/mymaster' }).redisUrl).toBe('redis+sentinel://h1:26379,h2:26379/mymaster');
    expect(() => loadConfig({ REDIS_URL: 'redis+sentinel://:hunter2@h1/mymaster' })).toThrow(/REDIS_URL.*Sentinel/);
    try {
      loadConfig({ REDIS_URL: 'redis+sentinel://:hunter2@h1/mymaster' });
    } catch (e) {
      expect((e as Error).message).not.toContain('hunter2');
    }
    expect(() => loadConfig({ REDIS_URL: 'http://h:6379' })).toThrow(/REDIS_URL/);
  });
});
