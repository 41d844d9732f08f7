/**
 * The accounts flow end to end over REST, and its key steps over a real @grpc/grpc-js client:
 * register -> code from the dev mailbox -> verify -> me -> refresh rotation -> reuse revokes the
 * family -> login -> API keys (revocation visible on another replica within 5 s) -> workspaces,
 * members, memory -> validate; ORG_API_KEY as owner; fencing; no secrets in the logs.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import * as grpc from '@grpc/grpc-js';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { AuthService, WorkspaceService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { ErrorDetailSchema } from '../../shared/gen/voiceplane/v1/common_pb.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { grpcClient } from '../helpers/grpc.js';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { api, createTestUser, readCode, type TestUser } from '../helpers/accounts.js';
import { seedOrgKey } from '../../control-plane/accounts/org.js';

const ORG_KEY = 'org-key-for-tests-0123456789abcdef';
const PASSWORD = 'correct horse battery staple';
let infra: TestInfra;
let app: ControlPlane;
let replicaB: ControlPlane;
/** Every bearer secret seen in the test, checked against the logs at the end. */
const secrets = new Set<string>([ORG_KEY, PASSWORD]);

beforeAll(async () => {
  infra = await startTestInfra({ orgApiKey: ORG_KEY });
  // The real wiring (every domain), twice: two replicas on one database and one Redis.
  app = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
  replicaB = await startControlPlane(infra, { port: 0, host: '127.0.0.1' });
});

afterAll(async () => {
  await replicaB?.close();
  await app?.close();
  await infra?.close();
});

const email = `alice-${Date.now()}@example.com`;
let alice: { token: string; refresh: string; userId: string; workspaceId: string };

describe('registration, tokens and sessions (REST)', () => {
  it('register mails a 6-digit code; verify returns tokens, user and the first workspace', async () => {
    const reg = await api(app, 'POST', '/api/v1/auth/register', { body: { email: email.toUpperCase(), password: PASSWORD, first_name: 'Alice', last_name: 'Liddell' } });
    expect(reg.status).toBe(200);
    expect(reg.body).toMatchObject({ success: true, error: null, data: { email, message: expect.any(String) } });
    const code = await readCode(app, email);
    expect(code).toMatch(/^\d{6}$/);
    const box = await api(app, 'GET', `/api/v1/dev/mailbox?email=${encodeURIComponent(email)}`, { token: ORG_KEY });
    expect(box.body.data[0]).toMatchObject({ to: email, code });

    const ver = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } });
    expect(ver.status).toBe(200);
    const d = ver.body.data;
    expect(d).toMatchObject({ expires_in: 3600, token_type: 'Bearer', user: { email, first_name: 'Alice', last_name: 'Liddell' } });
    expect(d.access_token.split('.')).toHaveLength(3);
    expect(d.workspace).toMatchObject({ user_id: d.user.id, role: 'owner', name: expect.any(String) });
    expect(d.workspace.created_at).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/);
    alice = { token: d.access_token, refresh: d.refresh_token, userId: d.user.id, workspaceId: d.workspace.id };
    secrets.add(d.access_token).add(d.refresh_token);

    // The code is single use.
    const again = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } });
    expect(again.status).toBe(400);
  });

  it('me returns the current user; a verified email cannot register again', async () => {
    const me = await api(app, 'GET', '/api/v1/auth/me', { token: alice.token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: alice.userId, email, first_name: 'Alice' });
    const dup = await api(app, 'POST', '/api/v1/auth/register', { body: { email, password: PASSWORD, first_name: 'A', last_name: 'B' } });
    expect(dup.status).toBe(409);
    expect(dup.body.error.code).toBe('EMAIL_TAKEN');
  });

  it('refresh rotates; reusing a used refresh token revokes the whole family', async () => {
    const r1 = alice.refresh;
    const a = await api(app, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: r1 } });
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({ token_type: 'Bearer', expires_in: 3600, user: { id: alice.userId } });
    expect(a.body.data.workspace).toBeUndefined();
    const r2 = a.body.data.refresh_token;
    expect(r2).not.toBe(r1);
    const b = await api(app, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: r2 } });
    expect(b.status).toBe(200);
    const r3 = b.body.data.refresh_token;
    const access3 = b.body.data.access_token;
    secrets.add(r2).add(r3).add(access3).add(a.body.data.access_token);
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: access3 })).status).toBe(200);

    const reuse = await api(app, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: r1 } });
    expect(reuse.status).toBe(401);
    expect(reuse.body.error.code).toBe('UNAUTHORIZED');
    // Every token of that login is dead: the newest refresh token and the access tokens.
    expect((await api(app, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: r3 } })).status).toBe(401);
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: access3 })).status).toBe(401);
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: alice.token })).status).toBe(401);
  });

  it('login returns a new pair without a workspace; wrong password is 401', async () => {
    const bad = await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'wrong password!' } });
    expect(bad.status).toBe(401);
    const unknown = await api(app, 'POST', '/api/v1/auth/login', { body: { email: 'nobody@example.com', password: PASSWORD } });
    expect(unknown.status).toBe(401);
    const ok = await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: PASSWORD } });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ token_type: 'Bearer', expires_in: 3600, user: { id: alice.userId } });
    expect(ok.body.data.workspace).toBeUndefined();
    alice.token = ok.body.data.access_token;
    alice.refresh = ok.body.data.refresh_token;
    secrets.add(alice.token).add(alice.refresh);
  });

  it('validate reads X-Auth-Token (not Authorization) and returns the user', async () => {
    const ok = await api(app, 'POST', '/api/v1/auth/validate', { headers: { 'x-auth-token': alice.token } });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ id: alice.userId, email });
    expect((await api(app, 'POST', '/api/v1/auth/validate', { token: alice.token })).status).toBe(401);
    expect((await api(app, 'POST', '/api/v1/auth/validate', { headers: { 'x-auth-token': 'garbage' } })).status).toBe(401);
    expect((await api(app, 'POST', '/api/v1/auth/validate', { body: { token: alice.token } })).status).toBe(401);
  });
});

describe('API keys (REST)', () => {
  it('create shows the raw key once; list omits it; the key authenticates; revoke rejects it', async () => {
    const c = await api(app, 'POST', '/api/v1/auth/api-keys', { token: alice.token, body: { name: 'ci', scopes: ['agents:read', 'conversations:read'] } });
    expect(c.status).toBe(201);
    const k = c.body.data;
    expect(k).toMatchObject({ name: 'ci', scopes: ['agents:read', 'conversations:read'], created_at: expect.any(String) });
    expect(k.key).toMatch(/^vpk_[A-Za-z0-9_-]{43,}$/);
    secrets.add(k.key);
    const stored = await infra.sql`select key_hash from api_keys where id = ${k.api_key}`;
    expect(stored[0].key_hash).not.toContain(k.key);

    const list = await api(app, 'GET', '/api/v1/auth/api-keys', { token: alice.token });
    expect(list.status).toBe(200);
    expect(list.body.data).toHaveLength(1);
    expect(list.body.data[0]).toMatchObject({ api_key: k.api_key, name: 'ci' });
    expect(list.body.data[0].key).toBeUndefined();
    expect(list.body.meta).toEqual({ page: 1, per_page: 20, total: 1, total_pages: 1 });

    const me = await api(app, 'GET', '/api/v1/auth/me', { token: k.key });
    expect(me.body.data.id).toBe(alice.userId);
    const v = await api(app, 'POST', '/api/v1/auth/validate', { headers: { 'x-auth-token': k.key } });
    expect(v.body.data.id).toBe(alice.userId);

    const del = await api(app, 'DELETE', `/api/v1/auth/api-keys/${k.api_key}`, { token: alice.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ message: 'revoked' });
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: k.key })).status).toBe(401);
    expect((await api(app, 'DELETE', `/api/v1/auth/api-keys/${k.api_key}`, { token: alice.token })).status).toBe(404);
  });

  it('a key revoked on one replica is rejected by another within 5 s', async () => {
    const c = await api(app, 'POST', '/api/v1/auth/api-keys', { token: alice.token, body: { name: 'replicated', scopes: [] } });
    const key = c.body.data.key as string;
    secrets.add(key);
    expect((await api(replicaB, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(200); // cached on B now
    const revokedAt = Date.now();
    expect((await api(app, 'DELETE', `/api/v1/auth/api-keys/${c.body.data.api_key}`, { token: alice.token })).status).toBe(200);
    let status = 200;
    while (Date.now() - revokedAt < 5000) {
      status = (await api(replicaB, 'GET', '/api/v1/auth/me', { token: key })).status;
      if (status === 401) break;
      await new Promise((r) => setTimeout(r, 100));
    }
    expect(status).toBe(401);
    expect(Date.now() - revokedAt).toBeLessThan(5000);
  }, 10_000);

  it('last_used_at is recorded, at most once a minute', async () => {
    const c = await api(app, 'POST', '/api/v1/auth/api-keys', { token: alice.token, body: { name: 'usage', scopes: [] } });
    secrets.add(c.body.data.key);
    for (let i = 0; i < 3; i++) await api(app, 'GET', '/api/v1/auth/me', { token: c.body.data.key });
    // The write is fire-and-forget for the request; wait for it rather than for a guessed delay.
    await app.accounts.auth.usageWritten();
    const [row] = await infra.sql`select last_used_at from api_keys where id = ${c.body.data.api_key}`;
    expect(row.last_used_at).toBeInstanceOf(Date);
    const first = (row.last_used_at as Date).getTime();
    await api(app, 'GET', '/api/v1/auth/me', { token: c.body.data.key });
    await app.accounts.auth.usageWritten();
    const [again] = await infra.sql`select last_used_at from api_keys where id = ${c.body.data.api_key}`;
    expect((again.last_used_at as Date).getTime()).toBe(first);
  });
});

describe('workspaces, members and memory (REST)', () => {
  let bob: TestUser;
  let carol: TestUser;
  let ws: string;

  beforeAll(async () => {
    bob = await createTestUser(app);
    carol = await createTestUser(app);
    secrets.add(bob.token).add(carol.token).add(bob.refreshToken).add(bob.password).add(carol.password);
  });

  it('CRUD', async () => {
    const c = await api(app, 'POST', '/api/v1/auth/workspaces', { token: alice.token, body: { name: 'Support team' } });
    expect(c.status).toBe(201);
    expect(c.body.data).toMatchObject({ name: 'Support team', user_id: alice.userId, role: 'owner' });
    ws = c.body.data.id;
    const list = await api(app, 'GET', '/api/v1/auth/workspaces', { token: alice.token });
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([alice.workspaceId, ws]);
    expect(list.body.meta.total).toBe(2);
    expect((await api(app, 'GET', '/api/v1/auth/workspaces?limit=1&offset=1', { token: alice.token })).body).toMatchObject({
      data: [{ id: ws }],
      meta: { page: 2, per_page: 1, total: 2, total_pages: 2 },
    });
    const get = await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: alice.token });
    expect(get.body.data).toMatchObject({ id: ws, name: 'Support team' });
    const put = await api(app, 'PUT', `/api/v1/auth/workspaces/${ws}`, { token: alice.token, body: { name: 'Sales', unknown_key: 1 } });
    expect(put.status).toBe(200);
    expect(put.body.data.name).toBe('Sales');
    expect(Date.parse(put.body.data.updated_at)).toBeGreaterThanOrEqual(Date.parse(put.body.data.created_at));
  });

  it('members: owner adds and removes; roles gate writes; the owner stays', async () => {
    const add = await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: alice.token, body: { email: bob.email, role: 'member' } });
    expect(add.status).toBe(201);
    expect(add.body.data).toMatchObject({ user_id: bob.userId, role: 'member', email: bob.email });
    const members = await api(app, 'GET', `/api/v1/auth/workspaces/${ws}/members`, { token: bob.token });
    expect(members.body.data.map((m: { role: string }) => m.role).sort()).toEqual(['member', 'owner']);
    // member: reads, cannot write memory (403), cannot rename, cannot delete
    expect((await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: bob.token })).body.data.role).toBe('member');
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/memory`, { token: bob.token, body: { title: 't', content: 'c' } })).status).toBe(403);
    expect((await api(app, 'PUT', `/api/v1/auth/workspaces/${ws}`, { token: bob.token, body: { name: 'x' } })).status).toBe(403);
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: bob.token, body: { email: carol.email, role: 'member' } })).status).toBe(403);
    // promote to admin: can manage members below admin, still cannot delete
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: alice.token, body: { email: bob.email, role: 'admin' } })).body.data.role).toBe('admin');
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: bob.token, body: { email: carol.email, role: 'manager' } })).status).toBe(201);
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: bob.token, body: { email: carol.email, role: 'admin' } })).status).toBe(403);
    expect((await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}`, { token: bob.token })).status).toBe(403);
    const rmOwner = await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}/members/${alice.userId}`, { token: bob.token });
    expect(rmOwner.status).toBe(409);
    const rmCarol = await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}/members/${carol.userId}`, { token: bob.token });
    expect(rmCarol.body.data).toEqual({ message: 'removed' });
    expect((await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: carol.token })).status).toBe(404);
    expect((await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/members`, { token: alice.token, body: { email: 'ghost@example.com', role: 'member' } })).status).toBe(404);
  });

  it('memory items: create, list, update, delete', async () => {
    const c = await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/memory`, {
      token: bob.token, // admin
      body: { title: 'Opening hours', content: 'Mon-Fri 9-17', metadata: { source: 'faq', n: 1 } },
    });
    expect(c.status).toBe(201);
    expect(c.body.data).toMatchObject({ workspace_id: ws, title: 'Opening hours', content_type: 'text/plain', metadata: { source: 'faq', n: 1 }, is_active: true });
    const id = c.body.data.id;
    await api(app, 'POST', `/api/v1/auth/workspaces/${ws}/memory`, { token: alice.token, body: { title: 'Prices', content: '<b>10</b>', content_type: 'text/html' } });
    const list = await api(app, 'GET', `/api/v1/auth/workspaces/${ws}/memory`, { token: alice.token });
    expect(list.body.data.map((m: { title: string }) => m.title)).toEqual(['Opening hours', 'Prices']);
    const up = await api(app, 'PUT', `/api/v1/auth/workspaces/${ws}/memory/${id}`, { token: alice.token, body: { is_active: false, content: 'Mon-Sat' } });
    expect(up.body.data).toMatchObject({ id, title: 'Opening hours', content: 'Mon-Sat', is_active: false, metadata: { source: 'faq' } });
    // an item is only reachable through its own workspace
    expect((await api(app, 'PUT', `/api/v1/auth/workspaces/${alice.workspaceId}/memory/${id}`, { token: alice.token, body: { title: 'x' } })).status).toBe(404);
    const del = await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}/memory/${id}`, { token: alice.token });
    expect(del.body.data).toEqual({ message: 'deleted' });
    expect((await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}/memory/${id}`, { token: alice.token })).status).toBe(404);
  });

  it('fencing: another user sees 404 on every route of a foreign workspace', async () => {
    const routes: Array<[string, string, unknown?]> = [
      ['GET', `/api/v1/auth/workspaces/${ws}`],
      ['PUT', `/api/v1/auth/workspaces/${ws}`, { name: 'pwned' }],
      ['DELETE', `/api/v1/auth/workspaces/${ws}`],
      ['GET', `/api/v1/auth/workspaces/${ws}/members`],
      ['POST', `/api/v1/auth/workspaces/${ws}/members`, { email: carol.email, role: 'admin' }],
      ['GET', `/api/v1/auth/workspaces/${ws}/memory`],
      ['POST', `/api/v1/auth/workspaces/${ws}/memory`, { title: 't', content: 'c' }],
    ];
    for (const [method, path, body] of routes) {
      const res = await api(app, method, path, { token: carol.token, body });
      expect(res.status, `${method} ${path}`).toBe(404);
      expect(res.body.error.code).toBe('NOT_FOUND');
    }
    const list = await api(app, 'GET', '/api/v1/auth/workspaces', { token: carol.token });
    expect(list.body.data.map((w: { id: string }) => w.id)).toEqual([carol.workspaceId]);
    expect((await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: alice.token })).body.data.name).toBe('Sales');
  });

  it('ORG_API_KEY acts as owner of every workspace', async () => {
    const get = await api(app, 'GET', `/api/v1/auth/workspaces/${carol.workspaceId}`, { token: ORG_KEY });
    expect(get.status).toBe(200);
    expect(get.body.data.role).toBe('owner');
    const mem = await api(app, 'POST', `/api/v1/auth/workspaces/${carol.workspaceId}/memory`, { token: ORG_KEY, body: { title: 'org', content: 'note' } });
    expect(mem.status).toBe(201);
    const all = await api(app, 'GET', '/api/v1/auth/workspaces?limit=200', { token: ORG_KEY });
    expect(all.body.data.map((w: { id: string }) => w.id)).toEqual(expect.arrayContaining([ws, carol.workspaceId, alice.workspaceId]));
    expect((await api(app, 'POST', '/api/v1/auth/validate', { headers: { 'x-auth-token': ORG_KEY } })).status).toBe(200);
  });

  it('a replica started without ORG_API_KEY (a development key generated under its DATA_DIR) does not revoke the configured key', async () => {
    const generated = `vpk_org_${'g'.repeat(32)}`;
    expect(await seedOrgKey(infra.sql, generated, infra.logger, Date.now(), true)).toEqual([]);
    // The configured key every other replica uses still works (it answered 401 everywhere); the generated one is not seeded.
    expect((await api(app, 'GET', '/api/v1/auth/workspaces', { token: ORG_KEY })).status).toBe(200);
    expect((await api(app, 'GET', '/api/v1/auth/workspaces', { token: generated })).status).toBe(401);
    expect(infra.logLines.join('')).toContain('the key generated under DATA_DIR is not used');
    // A configured key still replaces another configured one, and the first comes back the same way.
    const other = `org_${'h'.repeat(32)}`;
    expect(await seedOrgKey(infra.sql, other, infra.logger, Date.now())).toHaveLength(1);
    expect(await seedOrgKey(infra.sql, ORG_KEY, infra.logger, Date.now())).toHaveLength(1);
    expect((await api(app, 'GET', '/api/v1/auth/workspaces', { token: ORG_KEY })).status).toBe(200);
  });

  it('delete: owner only, answers {message}, then 404', async () => {
    const del = await api(app, 'DELETE', `/api/v1/auth/workspaces/${ws}`, { token: alice.token });
    expect(del.status).toBe(200);
    expect(del.body.data).toEqual({ message: 'deleted' });
    expect((await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: alice.token })).status).toBe(404);
    expect((await api(app, 'GET', `/api/v1/auth/workspaces/${ws}`, { token: bob.token })).status).toBe(404);
  });
});

describe('the same implementation over gRPC (@grpc/grpc-js)', () => {
  const clients: Array<{ close(): void }> = [];
  const client = (service: string) => {
    const c = grpcClient(app.port, service, 'voiceplane/v1/accounts.proto');
    clients.push(c);
    return c;
  };
  afterAll(() => clients.forEach((c) => c.close()));

  it('login, me, api keys, workspaces and memory; errors carry gRPC codes', async () => {
    const authSvc = client('AuthService');
    const login = await authSvc.call<{ access_token: string; expires_in: number; user: { id: string } }>('Login', { email, password: PASSWORD });
    expect(login).toMatchObject({ expires_in: 3600, token_type: 'Bearer', user: { id: alice.userId } });
    secrets.add(login.access_token);
    expect(await authSvc.call('Me', {}, login.access_token)).toMatchObject({ id: alice.userId, email });
    await expect(authSvc.call('Me', {})).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
    const md = new grpc.Metadata();
    md.set('x-auth-token', login.access_token);
    const validated = await new Promise((resolve, reject) =>
      (authSvc.client as unknown as Record<string, Function>).Validate({}, md, (err: unknown, res: unknown) => (err ? reject(err) : resolve(res))),
    );
    expect(validated).toMatchObject({ id: alice.userId });

    const keys = client('ApiKeyService');
    const k = await keys.call<{ api_key: string; key: string }>('CreateApiKey', { name: 'grpc', scopes: ['api_keys:read', 'workspaces:write', 'memory:write'] }, login.access_token);
    expect(k.key).toMatch(/^vpk_/);
    secrets.add(k.key);
    expect(await authSvc.call('Me', {}, k.key)).toMatchObject({ id: alice.userId });
    const listed = await keys.call<{ api_keys: Array<{ key?: string }> }>('ListApiKeys', {}, k.key);
    expect(listed.api_keys.length).toBeGreaterThan(0);
    expect(listed.api_keys.every((x) => !x.key)).toBe(true);

    const wsSvc = client('WorkspaceService');
    const w = await wsSvc.call<{ id: string; role: string }>('CreateWorkspace', { name: 'over grpc' }, k.key);
    expect(w.role).toBe('owner');
    const mem = client('MemoryService');
    const item = await mem.call<{ id: string; metadata: unknown }>(
      'CreateMemoryItem',
      { workspace_id: w.id, title: 't', content: 'c', metadata: { fields: { a: { stringValue: 'b' } } } },
      k.key,
    );
    expect(item.id).toBeTruthy();
    const items = await mem.call<{ items: unknown[] }>('ListMemoryItems', { workspace_id: w.id }, k.key);
    expect(items.items).toHaveLength(1);
    await expect(wsSvc.call('GetWorkspace', { id: w.id }, ORG_KEY)).resolves.toMatchObject({ role: 'owner' });
    const other = await createTestUser(app);
    secrets.add(other.token).add(other.password).add(other.refreshToken);
    await expect(wsSvc.call('GetWorkspace', { id: w.id }, other.token)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    await expect(wsSvc.call('GetWorkspace', { id: 'not-a-uuid' }, k.key)).rejects.toMatchObject({ code: grpc.status.NOT_FOUND });
    await expect(wsSvc.call('CreateWorkspace', { name: '' }, k.key)).rejects.toMatchObject({ code: grpc.status.INVALID_ARGUMENT });

    await keys.call('RevokeApiKey', { id: k.api_key }, login.access_token);
    await expect(authSvc.call('Me', {}, k.key)).rejects.toMatchObject({ code: grpc.status.UNAUTHENTICATED });
  });
});

describe('the same implementation over Connect', () => {
  it('me and a fenced workspace, with the envelope code in the error details', async () => {
    const transport = createConnectTransport({ baseUrl: `http://127.0.0.1:${app.port}`, httpVersion: '1.1' });
    const headers = { authorization: `Bearer ${alice.token}` };
    const me = await createClient(AuthService, transport).me({}, { headers });
    expect(me).toMatchObject({ id: alice.userId, email, firstName: 'Alice' });
    const outsider = await createTestUser(app);
    secrets.add(outsider.token).add(outsider.password).add(outsider.refreshToken);
    const err = await createClient(WorkspaceService, transport)
      .getWorkspace({ id: outsider.workspaceId }, { headers })
      .catch((e: unknown) => ConnectError.from(e));
    expect(err).toBeInstanceOf(ConnectError);
    expect((err as ConnectError).code).toBe(Code.NotFound);
    expect((err as ConnectError).findDetails(ErrorDetailSchema)[0]?.code).toBe('NOT_FOUND');
  });
});

describe('secrets stay out of storage and logs', () => {
  it('passwords are stored as scrypt hashes only', async () => {
    const rows = await infra.sql<{ password_hash: string }[]>`select password_hash from users where not is_org_owner`;
    expect(rows.length).toBeGreaterThan(0);
    for (const r of rows) expect(r.password_hash).toMatch(/^scrypt\$32768\$8\$1\$[A-Za-z0-9_-]{22}\$[A-Za-z0-9_-]{43}$/);
    const blob = JSON.stringify(await infra.sql`select * from users`);
    expect(blob).not.toContain(PASSWORD);
  });

  it('no password, token or key appears in the captured logs; codes only on dev mailbox lines', async () => {
    const logs = infra.logLines.join('');
    expect(logs.length).toBeGreaterThan(0);
    for (const s of secrets) expect(logs.includes(s), `secret ${s.slice(0, 6)}... leaked`).toBe(false);
    const codes = (await api(app, 'GET', '/api/v1/dev/mailbox', { token: ORG_KEY })).body.data.map((m: { code: string }) => m.code);
    for (const code of codes) {
      for (const line of infra.logLines.filter((l) => l.includes(`"${code}"`) || l.includes(` ${code}`))) {
        expect(line).toContain('dev mailbox');
      }
    }
  });
});
