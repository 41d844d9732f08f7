/**
 * Zero-config start: no DATABASE_URL (embedded PGlite under a temp DATA_DIR) and no REDIS_URL
 * (in-process registry). The real control plane boots, migrates and serves register -> verify -> me.
 */
import fs from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestInfra, type TestInfra } from '../helpers/infra.js';
import { api, createTestUser, startAccountsServer } from '../helpers/accounts.js';

let dataDir: string;
let infra: TestInfra | undefined;
let app: Awaited<ReturnType<typeof startAccountsServer>> | undefined;

beforeAll(async () => {
  dataDir = await fs.mkdtemp(path.join(os.tmpdir(), 'vp-embedded-'));
  infra = await startTestInfra({ dataDir }, { DATABASE_URL: '', REDIS_URL: '' });
  app = await startAccountsServer(infra);
}, 60_000);

afterAll(async () => {
  await app?.close();
  await infra?.close();
  await fs.rm(dataDir, { recursive: true, force: true });
}, 30_000);

describe('embedded mode boots and serves', () => {
  it('uses PGlite and the in-process registry', () => {
    expect(infra!.embeddedDb).toBe(true);
    expect(infra!.registry.kind).toBe('memory');
  });

  it('register -> verify -> me', async () => {
    const u = await createTestUser(app!);
    const me = await api(app!, 'GET', '/api/v1/auth/me', { token: u.token });
    expect(me.status).toBe(200);
    expect(me.body.data).toMatchObject({ id: u.userId, email: u.email });
    const ws = await api(app!, 'GET', `/api/v1/auth/workspaces/${u.workspaceId}`, { token: u.token });
    expect(ws.body.data.role).toBe('owner');
    expect((await api(app!, 'GET', '/ready')).status).toBe(200);
  }, 60_000);
});
