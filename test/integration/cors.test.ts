/**
 * CORS for browser clients (`CORS_ORIGINS`): listed origins get the allow headers on REST and
 * Connect paths and their preflights are answered; other origins get neither (403 on preflight);
 * credentials mode is never allowed. Plus the configuration's own checks.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { ConfigError, loadConfig } from '../../shared/config.js';
import { createTestUser, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const APP = 'http://localhost:5173';
let infra: TestInfra;
let cp: ControlPlane;
let user: TestUser;
let base = '';

beforeAll(async () => {
  infra = await startTestInfra({}, { CORS_ORIGINS: `${APP}, https://console.example.com` });
  cp = await startControlPlane({ ...infra }, { port: 0, host: '127.0.0.1' });
  user = await createTestUser(cp);
  base = `http://127.0.0.1:${cp.port}`;
});

afterAll(async () => {
  await cp?.close();
  await infra?.close();
});

function preflight(path: string, origin: string, headers = 'authorization, content-type') {
  return fetch(`${base}${path}`, { method: 'OPTIONS', headers: { origin, 'access-control-request-method': 'POST', 'access-control-request-headers': headers } });
}

describe('CORS', () => {
  it('answers a listed origin’s preflight on REST and Connect paths', async () => {
    for (const path of ['/api/v1/agents', '/voiceplane.v1.AgentService/ListAgents']) {
      const res = await preflight(path, APP);
      expect(res.status, path).toBe(204);
      expect(res.headers.get('access-control-allow-origin')).toBe(APP);
      expect(res.headers.get('access-control-allow-methods')).toContain('POST');
      expect(res.headers.get('access-control-allow-headers')).toContain('authorization');
      expect(res.headers.get('access-control-allow-credentials')).toBeNull();
      expect(res.headers.get('vary')).toBe('origin');
    }
  });

  it('a listed origin’s request carries the allow headers; the answer is unchanged', async () => {
    const res = await fetch(`${base}/api/v1/auth/me`, { headers: { origin: 'https://console.example.com', authorization: `Bearer ${user.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBe('https://console.example.com');
    expect(res.headers.get('access-control-expose-headers')).toContain('x-request-id');
    expect(res.headers.get('access-control-allow-credentials')).toBeNull();
  });

  it('an unlisted origin gets no allow headers and a 403 preflight', async () => {
    const pre = await preflight('/api/v1/agents', 'https://evil.example');
    expect(pre.status).toBe(403);
    expect(pre.headers.get('access-control-allow-origin')).toBeNull();
    const res = await fetch(`${base}/api/v1/auth/me`, { headers: { origin: 'https://evil.example', authorization: `Bearer ${user.token}` } });
    expect(res.status).toBe(200);
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });

  it('requests without an Origin are untouched', async () => {
    const res = await fetch(`${base}/api/v1/auth/me`, { headers: { authorization: `Bearer ${user.token}` } });
    expect(res.headers.get('access-control-allow-origin')).toBeNull();
  });
});

describe('CORS_ORIGINS', () => {
  it('takes origins and `*`; refuses paths, other schemes and `*` in a list, naming the variable', () => {
    expect(loadConfig({ CORS_ORIGINS: 'https://A.example.com/, http://localhost:3000' }).corsOrigins).toEqual(['https://a.example.com', 'http://localhost:3000']);
    expect(loadConfig({ CORS_ORIGINS: '*' }).corsOrigins).toEqual(['*']);
    expect(loadConfig({}).corsOrigins).toEqual([]);
    for (const bad of ['https://a.example.com/app', 'ftp://a.example.com', '*, https://a.example.com', 'not a url']) {
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(ConfigError);
      expect(() => loadConfig({ CORS_ORIGINS: bad }), bad).toThrow(/CORS_ORIGINS/);
    }
  });
});
