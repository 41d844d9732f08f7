/**
 * The development mailbox (`GET /api/v1/dev/mailbox`, `DevMailboxService`) holds every one-time
 * code, portal reset token and temporary password mailed in development: it answers only the
 * organization API key. No or a bad bearer is 401, a user's JWT or an ordinary API key is 403, over
 * REST and Connect alike; with SMTP configured the route does not exist (accounts.limits).
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Code, ConnectError, createClient } from '@connectrpc/connect';
import { createConnectTransport } from '@connectrpc/connect-node';
import { DevMailboxService } from '../../shared/gen/voiceplane/v1/accounts_pb.js';
import { api, createTestUser, startAccountsServer, type TestUser } from '../helpers/accounts.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';

const ORG_KEY = 'org-key-dev-mailbox-0123456789abcdef';
const BOX = '/api/v1/dev/mailbox';

let infra: TestInfra;
let app: Awaited<ReturnType<typeof startAccountsServer>>;
let user: TestUser;

beforeAll(async () => {
  infra = await startTestInfra({ orgApiKey: ORG_KEY });
  app = await startAccountsServer(infra);
  user = await createTestUser(app);
}, 30_000);

afterAll(async () => {
  await app?.close();
  await infra?.close();
});

describe('dev mailbox access', () => {
  it('no bearer or a bad one: 401 UNAUTHORIZED, and nothing of the mail in the answer', async () => {
    for (const opts of [{}, { token: 'not-a-key-at-all-0000000000' }, { headers: { authorization: 'Basic abc' } }]) {
      const r = await api(app, 'GET', `${BOX}?email=${encodeURIComponent(user.email)}`, opts);
      expect([r.status, r.body.error?.code], JSON.stringify(opts)).toEqual([401, 'UNAUTHORIZED']);
      expect(JSON.stringify(r.body)).not.toContain('verification code');
    }
  });

  it("a user's JWT or the user's own API key: 403 FORBIDDEN", async () => {
    expect((await api(app, 'GET', BOX, { token: user.token })).body.error.code).toBe('FORBIDDEN');
    const key = await api(app, 'POST', '/api/v1/auth/api-keys', { token: user.token, body: { name: 'ci' } });
    expect(key.status, JSON.stringify(key.body)).toBe(201);
    const r = await api(app, 'GET', BOX, { token: key.body.data.key });
    expect([r.status, r.body.error.code]).toEqual([403, 'FORBIDDEN']);
  });

  it('a key the organization key created, whatever its scopes, is not the organization key: 403', async () => {
    for (const scopes of [['agents:read'], ['*'], []]) {
      const key = await api(app, 'POST', '/api/v1/auth/api-keys', { token: ORG_KEY, body: { name: `child-${scopes.join('')}`, scopes } });
      expect(key.status, JSON.stringify(key.body)).toBe(201);
      const r = await api(app, 'GET', BOX, { token: key.body.data.key });
      expect([r.status, r.body.error?.code], JSON.stringify(scopes)).toEqual([403, 'FORBIDDEN']);
    }
  });

  it('the organization key reads the mail', async () => {
    const r = await api(app, 'GET', `${BOX}?email=${encodeURIComponent(user.email)}`, { token: ORG_KEY });
    expect(r.status).toBe(200);
    expect(r.body.data[0]).toMatchObject({ to: user.email, code: expect.stringMatching(/^\d{6}$/) });
  });

  it('Connect: the same rule (UNAUTHENTICATED, PERMISSION_DENIED, then the messages)', async () => {
    const client = createClient(DevMailboxService, createConnectTransport({ baseUrl: `http://127.0.0.1:${app.port}`, httpVersion: '1.1' }));
    const anon = await client.listMessages({ email: user.email }).catch((e: unknown) => e);
    expect((anon as ConnectError).code).toBe(Code.Unauthenticated);
    const asUser = await client.listMessages({ email: user.email }, { headers: { authorization: `Bearer ${user.token}` } }).catch((e: unknown) => e);
    expect((asUser as ConnectError).code).toBe(Code.PermissionDenied);
    const ok = await client.listMessages({ email: user.email }, { headers: { authorization: `Bearer ${ORG_KEY}` } });
    expect(ok.messages[0]?.to).toBe(user.email);
  });
});
