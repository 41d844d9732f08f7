/**
 * Limits and lifecycles with injected time: rate limits (429 + retry-after, per email and per IP),
 * one-time code expiry and the wrong-attempt limit, re-registration of a pending email, login of
 * an unverified user, access-token expiry, ORG_API_KEY seeding across restarts, mail configuration.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SimulatedClock } from '../../shared/clock.js';
import { MemoryRegistry } from '../../shared/registry/index.js';
import { createAccountsDomain } from '../../control-plane/accounts/index.js';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { api, readCode, startAccountsServer } from '../helpers/accounts.js';

let infra: TestInfra;
let clock: SimulatedClock;
let app: Awaited<ReturnType<typeof startAccountsServer>>;
const unique = () => `u-${Math.random().toString(36).slice(2, 10)}@example.com`;
const PW = 'a fine password';

async function register(email: string, password = PW, ip?: string) {
  return api(app, 'POST', '/api/v1/auth/register', { body: { email, password, first_name: 'R', last_name: 'L' }, localAddress: ip });
}

beforeAll(async () => {
  infra = await startTestInfra({ orgApiKey: 'first-org-key-0123456789' });
  clock = new SimulatedClock(Date.now());
  app = await startAccountsServer({ ...infra, clock });
});

afterAll(async () => {
  await app?.close();
  await infra?.close();
});

describe('rate limits', () => {
  it('login: the 11th attempt for one email within a minute is 429 with retry-after, from any IP', async () => {
    const email = unique();
    for (let i = 0; i < 10; i++) expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'wrong-password' } })).status).toBe(401);
    const res = await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'wrong-password' } });
    expect(res.status).toBe(429);
    expect(res.body.error.code).toBe('RATE_LIMITED');
    const retry = Number(res.headers['retry-after']);
    expect(retry).toBeGreaterThanOrEqual(1);
    expect(retry).toBeLessThanOrEqual(60);
    // the next window opens after retry-after
    clock.advance(retry * 1000);
    expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'wrong-password' } })).status).toBe(401);
  });

  it('login: the 31st attempt from one IP within a minute is 429 (other IPs unaffected)', async () => {
    clock.advance(60_000);
    const ip = '127.0.9.9';
    for (let i = 0; i < 30; i++) {
      expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email: unique(), password: 'wrong-password' }, localAddress: ip })).status).toBe(401);
    }
    const res = await api(app, 'POST', '/api/v1/auth/login', { body: { email: unique(), password: 'wrong-password' }, localAddress: ip });
    expect(res.status).toBe(429);
    expect(res.headers['retry-after']).toBeDefined();
    expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email: unique(), password: 'wrong-password' }, localAddress: '127.0.9.10' })).status).toBe(401);
  }, 30_000);

  it('verify-otp: 11th attempt per email is 429; resend: 6th mail per email in 10 minutes is 429', async () => {
    const email = unique();
    expect((await register(email)).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: '000000' } })).status).toBe(400);
    const v = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: '000000' } });
    expect(v.status).toBe(429);
    expect(Number(v.headers['retry-after'])).toBeGreaterThan(0);
    // register counted one mail; 4 resends allowed, the 5th resend (6th mail) is refused
    for (let i = 0; i < 4; i++) expect((await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email } })).status).toBe(200);
    const r = await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email } });
    expect(r.status).toBe(429);
    expect(Number(r.headers['retry-after'])).toBeLessThanOrEqual(600);
  });
});

describe('one-time codes', () => {
  it('expire after 10 minutes; resend issues a working code', async () => {
    clock.advance(600_000);
    const email = unique();
    await register(email);
    const code = await readCode(app, email);
    clock.advance(10 * 60_000 + 1);
    const late = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } });
    expect(late.status).toBe(400);
    expect(late.body.error.details[0].field).toBe('code');
    const resend = await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email } });
    expect(resend.body.data).toMatchObject({ email, message: expect.any(String) });
    const fresh = await readCode(app, email);
    clock.advance(9 * 60_000);
    expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: fresh } })).status).toBe(200);
  });

  it('die after 5 wrong attempts (even the right code is refused), are stored hashed', async () => {
    const email = unique();
    await register(email);
    const code = await readCode(app, email);
    const wrong = code === '000001' ? '000002' : '000001';
    const rows = await infra.sql`select code_hash from otp_codes o join users u on u.id = o.user_id where u.email = ${email}`;
    expect(rows[0].code_hash).toMatch(/^[0-9a-f]{64}$/);
    expect(rows[0].code_hash).not.toContain(code);
    for (let i = 0; i < 5; i++) expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: wrong } })).status).toBe(400);
    const dead = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } });
    expect(dead.status).toBe(400);
    expect(dead.body.error.details[0].problem).toMatch(/too many/);
    await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email } });
    const next = await readCode(app, email);
    expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: next } })).status).toBe(200);
  });

  it('4 wrong attempts then the right code still verifies', async () => {
    const email = unique();
    await register(email);
    const code = await readCode(app, email);
    const wrong = code === '000001' ? '000002' : '000001';
    for (let i = 0; i < 4; i++) await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: wrong } });
    expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code } })).status).toBe(200);
  });

  it('resend-otp answers the same for unknown, pending and verified addresses', async () => {
    const pending = unique();
    await register(pending);
    const a = await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email: pending } });
    const b = await api(app, 'POST', '/api/v1/auth/resend-otp', { body: { email: 'never-registered@example.com' } });
    expect(a.status).toBe(200);
    expect(b.status).toBe(200);
    expect(a.body.data.message).toBe(b.body.data.message);
    expect(b.body.data.email).toBe('never-registered@example.com');
  });
});

describe('registration and login', () => {
  it('re-registering a pending email replaces the password and the code', async () => {
    const email = unique();
    await register(email, 'first password');
    const oldCode = await readCode(app, email);
    await register(email, 'second password');
    const newCode = await readCode(app, email);
    if (oldCode !== newCode) expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: oldCode } })).status).toBe(400);
    expect((await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: newCode } })).status).toBe(200);
    expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'first password' } })).status).toBe(401);
    expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'second password' } })).status).toBe(200);
    const [{ n }] = await infra.sql`select count(*)::int as n from users where lower(email) = ${email}`;
    expect(n).toBe(1);
  });

  it('an unverified user with the right password gets 403; with a wrong one 401', async () => {
    const email = unique();
    await register(email);
    const ok = await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: PW } });
    expect(ok.status).toBe(403);
    expect(ok.body.error.code).toBe('FORBIDDEN');
    expect((await api(app, 'POST', '/api/v1/auth/login', { body: { email, password: 'not the password' } })).status).toBe(401);
  });

  it('access tokens expire after 3600 s', async () => {
    const email = unique();
    await register(email);
    const v = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: await readCode(app, email) } });
    const token = v.body.data.access_token;
    clock.advance(3599_000);
    expect((await api(app, 'GET', '/api/v1/auth/me', { token })).status).toBe(200);
    clock.advance(2_000);
    expect((await api(app, 'GET', '/api/v1/auth/me', { token })).status).toBe(401);
    // the refresh token outlives it
    expect((await api(app, 'POST', '/api/v1/auth/refresh', { body: { refresh_token: v.body.data.refresh_token } })).status).toBe(200);
  });
});

describe('ORG_API_KEY seeding', () => {
  it('is idempotent across restarts; a changed key revokes the old one; unset revokes it', async () => {
    const first = 'first-org-key-0123456789';
    expect((await api(app, 'GET', '/api/v1/auth/me', { token: first })).status).toBe(200);
    const again = await createAccountsDomain({ ...infra, clock });
    await again.close?.();
    const rows = await infra.sql`select id from api_keys where is_org_key`;
    expect(rows).toHaveLength(1);
    const owners = await infra.sql`select id from users where is_org_owner`;
    expect(owners).toHaveLength(1);

    const second = 'second-org-key-9876543210';
    const rotated = await startAccountsServer({ ...infra, clock, config: { ...infra.config, orgApiKey: second } });
    try {
      expect((await api(rotated, 'GET', '/api/v1/auth/me', { token: second })).status).toBe(200);
      expect((await api(rotated, 'GET', '/api/v1/auth/me', { token: first })).status).toBe(401);
      const me = await api(rotated, 'GET', '/api/v1/auth/me', { token: second });
      expect(me.body.data.id).toBe(owners[0].id);
      // the org key is not revocable through the API
      const keys = await api(rotated, 'GET', '/api/v1/auth/api-keys', { token: second });
      const orgKeyId = keys.body.data[0].api_key;
      expect((await api(rotated, 'DELETE', `/api/v1/auth/api-keys/${orgKeyId}`, { token: second })).status).toBe(409);
    } finally {
      await rotated.close();
    }
    const unset = await createAccountsDomain({ ...infra, clock, config: { ...infra.config, orgApiKey: undefined } });
    await unset.close?.();
    const live = await infra.sql`select id from api_keys where is_org_key and revoked_at is null`;
    expect(live).toHaveLength(0);
  });
});

describe('revocation across replicas (injected time)', () => {
  it('another replica sharing the registry drops a revoked key at once (change notice)', async () => {
    const email = unique();
    await register(email);
    const v = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: await readCode(app, email) } });
    const token = v.body.data.access_token;
    const b = await startAccountsServer({ ...infra, clock });
    try {
      const c = await api(app, 'POST', '/api/v1/auth/api-keys', { token, body: { name: 'k', scopes: [] } });
      const key = c.body.data.key;
      expect((await api(b, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(200);
      await api(app, 'DELETE', `/api/v1/auth/api-keys/${c.body.data.api_key}`, { token });
      // Both servers share one registry object here: the notice reaches b before the DELETE answers.
      expect((await api(b, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(401);
    } finally {
      await b.close();
    }
  });

  it('a replica that never hears the notice serves a revoked key from its cache for at most 4 s', async () => {
    const email = unique();
    await register(email);
    const v = await api(app, 'POST', '/api/v1/auth/verify-otp', { body: { email, code: await readCode(app, email) } });
    const token = v.body.data.access_token;
    // Its own registry: notices from `app` never reach it (as when Redis lost them).
    const b = await startAccountsServer({ ...infra, clock, registry: new MemoryRegistry(clock) });
    try {
      const c = await api(app, 'POST', '/api/v1/auth/api-keys', { token, body: { name: 'k', scopes: [] } });
      const key = c.body.data.key;
      expect((await api(b, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(200);
      await api(app, 'DELETE', `/api/v1/auth/api-keys/${c.body.data.api_key}`, { token });
      expect((await api(app, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(401); // this replica: at once
      clock.advance(3_900);
      expect((await api(b, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(200); // still cached on b
      clock.advance(200);
      expect((await api(b, 'GET', '/api/v1/auth/me', { token: key })).status).toBe(401);
    } finally {
      await b.close();
    }
  });
});

describe('mail configuration', () => {
  it('with SMTP configured there is no dev mailbox and no /dev/mailbox route', async () => {
    const d = await createAccountsDomain({ ...infra, clock, config: { ...infra.config, smtpUrl: 'smtp://127.0.0.1:1' } });
    expect(d.mailbox).toBeUndefined();
    expect(d.routes.some((r) => r.path.includes('/dev/'))).toBe(false);
    await d.close?.();
  });

  it('production refuses to start without SMTP', async () => {
    await expect(createAccountsDomain({ ...infra, clock, config: { ...infra.config, nodeEnv: 'production', smtpUrl: undefined } })).rejects.toThrow(/SMTP_URL/);
  });
});
