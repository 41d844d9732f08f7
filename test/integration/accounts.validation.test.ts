/**
 * Bad input on every accounts route: missing fields and wrong types are 400 INVALID_REQUEST naming
 * the field, non-UUID ids are 404, bodies that are not JSON objects are 400 INVALID_BODY, oversized
 * bodies 413, bad credentials 401; and the process keeps serving afterwards.
 */
import net from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { api, createTestUser, startAccountsServer, type TestUser } from '../helpers/accounts.js';

let infra: TestInfra;
let app: Awaited<ReturnType<typeof startAccountsServer>>;
let user: TestUser;
let memoryId: string;

beforeAll(async () => {
  infra = await startTestInfra();
  app = await startAccountsServer(infra);
  user = await createTestUser(app);
  const m = await api(app, 'POST', `/api/v1/auth/workspaces/${user.workspaceId}/memory`, { token: user.token, body: { title: 't', content: 'c' } });
  memoryId = m.body.data.id;
});

afterAll(async () => {
  await app?.close();
  await infra?.close();
});

/** Writes `parts` on a raw socket; resolves with what came back once the server closes (or 3 s pass / the client ends). */
function rawExchange(port: number, parts: string[], opts: { endAfterWrite?: boolean } = {}): Promise<{ text: string; closed: boolean }> {
  return new Promise((resolve) => {
    const sock = net.connect(port, '127.0.0.1');
    let text = '';
    let settled = false;
    const finish = (closed: boolean) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      resolve({ text, closed });
    };
    const timer = setTimeout(() => finish(false), 3000);
    sock.on('data', (d) => (text += d.toString('latin1')));
    sock.on('error', () => finish(true));
    sock.on('close', () => finish(true));
    sock.on('connect', () => {
      for (const p of parts) if (!sock.destroyed) sock.write(p);
      if (opts.endAfterWrite) setTimeout(() => finish(false), 50);
    });
  });
}

type Case = [method: string, path: () => string, body: unknown, field: string];
const W = () => `/api/v1/auth/workspaces/${user.workspaceId}`;
const reg = { email: 'x@example.com', password: 'long enough pw', first_name: 'F', last_name: 'L' };

const invalidCases: Case[] = [
  ['POST', () => '/api/v1/auth/register', { ...reg, email: undefined }, 'email'],
  ['POST', () => '/api/v1/auth/register', { ...reg, email: 'not-an-email' }, 'email'],
  ['POST', () => '/api/v1/auth/register', { ...reg, email: 5 }, 'email'],
  ['POST', () => '/api/v1/auth/register', { ...reg, password: undefined }, 'password'],
  ['POST', () => '/api/v1/auth/register', { ...reg, password: 'short' }, 'password'],
  ['POST', () => '/api/v1/auth/register', { ...reg, password: 'x'.repeat(257) }, 'password'],
  ['POST', () => '/api/v1/auth/register', { ...reg, password: true }, 'password'],
  ['POST', () => '/api/v1/auth/register', { ...reg, first_name: undefined }, 'first_name'],
  ['POST', () => '/api/v1/auth/register', { ...reg, first_name: { a: 1 } }, 'first_name'],
  ['POST', () => '/api/v1/auth/register', { ...reg, last_name: '   ' }, 'last_name'],
  ['POST', () => '/api/v1/auth/verify-otp', { code: '123456' }, 'email'],
  ['POST', () => '/api/v1/auth/verify-otp', { email: 'x@example.com' }, 'code'],
  ['POST', () => '/api/v1/auth/verify-otp', { email: 'x@example.com', code: 'abcdef' }, 'code'],
  ['POST', () => '/api/v1/auth/verify-otp', { email: 'x@example.com', code: 123456 }, 'code'],
  ['POST', () => '/api/v1/auth/resend-otp', {}, 'email'],
  ['POST', () => '/api/v1/auth/resend-otp', { email: ['a@b.co'] }, 'email'],
  ['POST', () => '/api/v1/auth/login', { password: 'whatever1' }, 'email'],
  ['POST', () => '/api/v1/auth/login', { email: 'x@example.com' }, 'password'],
  ['POST', () => '/api/v1/auth/login', { email: 'x@example.com', password: 12345678 }, 'password'],
  ['POST', () => '/api/v1/auth/refresh', {}, 'refresh_token'],
  ['POST', () => '/api/v1/auth/refresh', { refresh_token: 1 }, 'refresh_token'],
  ['POST', () => '/api/v1/auth/api-keys', { scopes: [] }, 'name'],
  ['POST', () => '/api/v1/auth/api-keys', { name: 'k', scopes: 'agents:read' }, 'scopes'],
  ['POST', () => '/api/v1/auth/api-keys', { name: 'k', scopes: [1] }, 'scopes'],
  ['POST', () => '/api/v1/auth/api-keys', { name: 'k', scopes: ['has space'] }, 'scopes'],
  ['POST', () => '/api/v1/auth/api-keys', { name: 'k', scopes: Array.from({ length: 33 }, (_, i) => `s${i}:read`) }, 'scopes'],
  ['GET', () => '/api/v1/auth/api-keys?limit=0', undefined, 'limit'],
  ['GET', () => '/api/v1/auth/api-keys?limit=201', undefined, 'limit'],
  ['GET', () => '/api/v1/auth/api-keys?limit=abc', undefined, 'limit'],
  ['GET', () => '/api/v1/auth/workspaces?offset=-1', undefined, 'offset'],
  ['POST', () => '/api/v1/auth/workspaces', {}, 'name'],
  ['POST', () => '/api/v1/auth/workspaces', { name: 42 }, 'name'],
  ['POST', () => '/api/v1/auth/workspaces', { name: 'x'.repeat(201) }, 'name'],
  ['PUT', () => W(), { name: '' }, 'name'],
  ['PUT', () => W(), { name: false }, 'name'],
  ['GET', () => `${W()}/members?limit=1000`, undefined, 'limit'],
  ['POST', () => `${W()}/members`, { role: 'member' }, 'email'],
  ['POST', () => `${W()}/members`, { email: 'x@example.com' }, 'role'],
  ['POST', () => `${W()}/members`, { email: 'x@example.com', role: 'owner' }, 'role'],
  ['POST', () => `${W()}/members`, { email: 'x@example.com', role: 'boss' }, 'role'],
  ['POST', () => `${W()}/memory`, { content: 'c' }, 'title'],
  ['POST', () => `${W()}/memory`, { title: 't' }, 'content'],
  ['POST', () => `${W()}/memory`, { title: 't', content: 'c', metadata: 'x' }, 'metadata'],
  ['POST', () => `${W()}/memory`, { title: 't', content: 'c', metadata: [1] }, 'metadata'],
  ['POST', () => `${W()}/memory`, { title: 't', content: 'c', content_type: 'plain' }, 'content_type'],
  ['POST', () => `${W()}/memory`, { title: 't', content: 'c', metadata: { big: 'x'.repeat(17_000) } }, 'metadata'],
  ['GET', () => `${W()}/memory?limit=-5`, undefined, 'limit'],
  ['PUT', () => `${W()}/memory/${memoryId}`, { is_active: 'yes' }, 'is_active'],
  ['PUT', () => `${W()}/memory/${memoryId}`, { title: '' }, 'title'],
  ['PUT', () => `${W()}/memory/${memoryId}`, { metadata: 7 }, 'metadata'],
];

describe('400 INVALID_REQUEST names the field', () => {
  it.each(invalidCases.map((c) => [`${c[0]} ${c[1].toString().slice(6, 60)} ${JSON.stringify(c[2] ?? '').slice(0, 50)}`, c] as const))('%s', async (_n, [method, path, body, field]) => {
    const res = await api(app, method, path(), { token: user.token, body });
    expect(res.status).toBe(400);
    expect(res.body).toMatchObject({ success: false, data: null, error: { code: 'INVALID_REQUEST' } });
    expect(res.body.error.details?.[0]?.field ?? res.body.error.message).toContain(field);
  });
});

describe('ids that are not UUIDs are 404, never a database error', () => {
  const bad = ['not-a-uuid', '1', "1'%20or%20'1'='1", '00000000-0000-0000-0000-00000000000z'];
  it('on every id route', async () => {
    for (const id of bad) {
      const routes: Array<[string, string, unknown?]> = [
        ['DELETE', `/api/v1/auth/api-keys/${id}`],
        ['GET', `/api/v1/auth/workspaces/${id}`],
        ['PUT', `/api/v1/auth/workspaces/${id}`, { name: 'x' }],
        ['DELETE', `/api/v1/auth/workspaces/${id}`],
        ['GET', `/api/v1/auth/workspaces/${id}/members`],
        ['POST', `/api/v1/auth/workspaces/${id}/members`, { email: 'a@b.co', role: 'member' }],
        ['DELETE', `/api/v1/auth/workspaces/${id}/members/${user.userId}`],
        ['DELETE', `${W()}/members/${id}`],
        ['GET', `/api/v1/auth/workspaces/${id}/memory`],
        ['POST', `/api/v1/auth/workspaces/${id}/memory`, { title: 't', content: 'c' }],
        ['PUT', `${W()}/memory/${id}`, { title: 'x' }],
        ['DELETE', `${W()}/memory/${id}`],
        ['PUT', `/api/v1/auth/workspaces/${id}/memory/${memoryId}`, { title: 'x' }],
      ];
      for (const [method, path, body] of routes) {
        const res = await api(app, method, path, { token: user.token, body });
        expect(res.status, `${method} ${path}`).toBe(404);
        expect(res.body.error.code).toBe('NOT_FOUND');
      }
    }
    // a well-formed but unknown id is the same 404
    expect((await api(app, 'GET', '/api/v1/auth/workspaces/0190a000-0000-7000-8000-000000000000', { token: user.token })).status).toBe(404);
  });
});

describe('bodies', () => {
  const posts = ['/api/v1/auth/register', '/api/v1/auth/verify-otp', '/api/v1/auth/login', '/api/v1/auth/api-keys', '/api/v1/auth/workspaces'];

  it('invalid JSON and non-object JSON are 400 INVALID_BODY', async () => {
    for (const p of [...posts, `${W()}/memory`]) {
      for (const rawBody of ['{"email":', '[1,2]', '"text"', '42', 'null']) {
        const res = await api(app, 'POST', p, { token: user.token, rawBody });
        expect(res.status, `${p} ${rawBody}`).toBe(400);
        expect(res.body.error.code).toBe('INVALID_BODY');
      }
    }
  });

  it('oversized bodies are 413', async () => {
    const big = JSON.stringify({ email: 'a@b.co', password: 'x'.repeat(2 * 1024 * 1024) });
    for (const p of [...posts, `${W()}/memory`]) {
      const res = await api(app, 'POST', p, { token: user.token, rawBody: big });
      expect(res.status, p).toBe(413);
      expect(res.body.error.code).toBe('PAYLOAD_TOO_LARGE');
    }
  });

  it('an oversized chunked body (no content-length) is cut off, and a body the client abandons mid-way is dropped; both leave the server serving', async () => {
    // Chunked: the size is only known while reading; past the limit the request is destroyed.
    const chunked = await rawExchange(app.port, [
      `POST ${W()}/memory HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${user.token}\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n`,
      ...Array.from({ length: 40 }, () => `10000\r\n${'x'.repeat(0x10000)}\r\n`),
      '0\r\n\r\n',
    ]);
    expect(chunked.closed).toBe(true);
    expect(chunked.text).not.toMatch(/^HTTP\/1\.1 2/);
    // Half a declared body, then the client leaves.
    const cut = await rawExchange(app.port, [`POST ${W()}/memory HTTP/1.1\r\nhost: x\r\nauthorization: Bearer ${user.token}\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{"title":"t",`], { endAfterWrite: true });
    expect(cut.text).toBe('');
    const after = await api(app, 'GET', `${W()}/memory`, { token: user.token });
    expect(after.status).toBe(200);
    expect(after.body.data.every((m: { id: string; title: string }) => m.title !== 't' || m.id === memoryId)).toBe(true);
  });

  it('unknown keys are ignored', async () => {
    const res = await api(app, 'POST', '/api/v1/auth/workspaces', { token: user.token, body: { name: 'ok', surprise: { deep: [1] }, id: 'mine' } });
    expect(res.status).toBe(201);
    expect(res.body.data.id).not.toBe('mine');
  });
});

describe('credentials', () => {
  const authed: Array<[string, string]> = [
    ['GET', '/api/v1/auth/me'],
    ['GET', '/api/v1/auth/api-keys'],
    ['POST', '/api/v1/auth/api-keys'],
    ['DELETE', '/api/v1/auth/api-keys/0190a000-0000-7000-8000-000000000000'],
    ['GET', '/api/v1/auth/workspaces'],
    ['POST', '/api/v1/auth/workspaces'],
    ['GET', `/api/v1/auth/workspaces/0190a000-0000-7000-8000-000000000000`],
    ['GET', `/api/v1/auth/workspaces/0190a000-0000-7000-8000-000000000000/memory`],
    ['GET', `/api/v1/auth/workspaces/0190a000-0000-7000-8000-000000000000/members`],
  ];

  it('missing, malformed, forged, expired and unknown bearers are 401 on every authenticated route', async () => {
    const enc = new TextEncoder();
    const nowS = Math.floor(Date.now() / 1000);
    const forged = await new SignJWT({ typ: 'access', sid: '0190a000-0000-7000-8000-000000000000' })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.userId)
      .setIssuer('voiceplane')
      .setJti('x')
      .setIssuedAt(nowS)
      .setExpirationTime(nowS + 3600)
      .sign(enc.encode('not the server key, not the server key'));
    const sid = (JSON.parse(Buffer.from(user.token.split('.')[1], 'base64url').toString()) as { sid: string }).sid;
    const expired = await new SignJWT({ typ: 'access', sid })
      .setProtectedHeader({ alg: 'HS256' })
      .setSubject(user.userId)
      .setIssuer('voiceplane')
      .setJti('y')
      .setIssuedAt(nowS - 7200)
      .setExpirationTime(nowS - 3600)
      .sign(infra.jwtKey);
    const none = `${Buffer.from('{"alg":"none"}').toString('base64url')}.${user.token.split('.')[1]}.`;
    const headers: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic dXNlcjpwYXNz' },
      { authorization: 'Bearer' },
      { authorization: `Bearer ${user.token} extra` },
      { authorization: `Bearer ${forged}` },
      { authorization: `Bearer ${expired}` },
      { authorization: `Bearer ${none}` },
      { authorization: `Bearer ${user.token.slice(0, -2)}xx` },
      { authorization: 'Bearer vpk_doesnotexistdoesnotexistdoesnotexist0000000' },
      { authorization: `Bearer ${'a'.repeat(5000)}` },
    ];
    for (const [method, path] of authed) {
      for (const h of headers) {
        const res = await api(app, method, path, { headers: h, body: method === 'POST' ? { name: 'n' } : undefined });
        expect(res.status, `${method} ${path} ${JSON.stringify(h).slice(0, 40)}`).toBe(401);
        expect(res.body.error.code).toBe('UNAUTHORIZED');
      }
    }
    // The real token still works: nothing above broke the session.
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: user.token })).status).toBe(200);
  });

  it('the dev mailbox route is served (development, behind a credential) and unknown routes are 404', async () => {
    expect((await api(app, 'GET', '/api/v1/dev/mailbox')).status).toBe(401);
    expect((await api(app, 'GET', '/api/v1/auth/nope')).status).toBe(404);
    expect((await api(app, 'PATCH', '/api/v1/auth/me')).status).toBe(405);
  });

  it('the process is still up and healthy', async () => {
    const res = await api(app, 'GET', '/ready');
    expect(res.status).toBe(200);
    expect(res.body.status).toBe('ok');
    expect(infra.logLines.some((l) => l.includes('"level":50'))).toBe(false); // no 500 was logged
  });
});
