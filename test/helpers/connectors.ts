/**
 * One control plane with the four connector vendor fakes (HubSpot, Zendesk, Stripe, Cal.com)
 * pointed at by CONNECTOR_<ID>_BASE_URL, an owner with a member and a manager in the owner's
 * workspace, and a stranger. `connectorsSuite()` registers its own beforeAll/afterAll.
 */
import { afterAll, beforeAll, expect } from 'vitest';
import { startControlPlane, type ControlPlane } from '../../control-plane/app.js';
import { CalcomFake } from '../fakes/calcom.js';
import { HubSpotFake } from '../fakes/hubspot.js';
import { StripeFake } from '../fakes/stripe.js';
import { ZendeskFake } from '../fakes/zendesk.js';
import type { VendorFake } from '../fakes/vendor-base.js';
import { api, createTestUser, type ApiResponse, type TestUser } from './accounts.js';
import { startTestInfra, type TestInfra } from './infra.js';

export const C = '/api/v1/connectors';
export const HUBSPOT_KEY = 'pat-na1-11111111-2222-3333-4444-555555555555';
export const HUBSPOT_KEY2 = 'pat-na1-66666666-7777-8888-9999-000000000000';
export const WRONG_HUBSPOT_KEY = 'pat-na1-deadbeef-dead-beef-dead-beefdeadbeef';
export const ZENDESK_TOKEN = 'zdTokenAbcdefghijklmnopqrstuvwxyz0123456';
export const STRIPE_KEY = 'sk_test_51FakeStripeKeyForConnectorTests0001';
export const CALCOM_KEY = 'cal_test_0123456789abcdefghijklmnop';
export const ALL_SECRETS = [HUBSPOT_KEY, HUBSPOT_KEY2, WRONG_HUBSPOT_KEY, ZENDESK_TOKEN, STRIPE_KEY, CALCOM_KEY];
/** Vendor request bound of the suite: short enough for the timeout test, loose enough for a loaded CI. */
export const CONNECTOR_TIMEOUT_MS = 1500;

export interface ConnectorsSuite {
  infra: TestInfra;
  cp: ControlPlane;
  owner: TestUser;
  member: TestUser;
  manager: TestUser;
  stranger: TestUser;
  hubspot: HubSpotFake;
  zendesk: ZendeskFake;
  stripe: StripeFake;
  calcom: CalcomFake;
  ws(): string;
  connectKey(provider: string, body: unknown, token?: string, workspace?: string): Promise<ApiResponse<any>>;
  execute(connectionId: string, action: string, body: unknown, token?: string): Promise<ApiResponse<any>>;
  connections(): Promise<any[]>;
  connectionOf(provider: string): Promise<any>;
  rowsOf(provider: string): Promise<Array<{ id: string; secret_enc: string | null }>>;
}

/** More vendor fakes for one test file: started with the four, closed with them; `baseUrls` is read after they listen. */
export interface ExtraVendors {
  fakes: VendorFake[];
  baseUrls(): Record<string, string>;
}

export function connectorsSuite(extra?: ExtraVendors): ConnectorsSuite {
  const s = {
    hubspot: new HubSpotFake(),
    zendesk: new ZendeskFake(),
    stripe: new StripeFake(),
    calcom: new CalcomFake(),
    ws: () => `${C}/workspace/${s.owner.workspaceId}`,
    connectKey: (provider: string, body: unknown, token = s.owner.token, workspace = s.owner.workspaceId) =>
      api(s.cp, 'POST', `${C}/workspace/${workspace}/connect-key/${provider}`, { token, body }),
    execute: (connectionId: string, action: string, body: unknown, token = s.owner.token) => api(s.cp, 'POST', `${C}/execute/${connectionId}/${action}`, { token, body }),
    async connections() {
      const res = await api(s.cp, 'GET', `${s.ws()}/connections`, { token: s.owner.token });
      expect(res.status).toBe(200);
      return res.body.data as any[];
    },
    connectionOf: async (provider: string) => (await s.connections()).find((c) => c.provider_id === provider),
    rowsOf: (provider: string) => s.infra.sql<Array<{ id: string; secret_enc: string | null }>>`select id, secret_enc from connector_connections where provider_id = ${provider}`,
  } as unknown as ConnectorsSuite;

  beforeAll(async () => {
    const fakes = [s.hubspot, s.zendesk, s.stripe, s.calcom, ...(extra?.fakes ?? [])];
    await Promise.all(fakes.map((f) => f.start()));
    s.infra = await startTestInfra({
      connectorBaseUrls: { hubspot: s.hubspot.url, zendesk: `${s.zendesk.url}/{subdomain}`, stripe: s.stripe.url, calcom: s.calcom.url, ...extra?.baseUrls() },
      connectorTimeoutMs: CONNECTOR_TIMEOUT_MS,
    });
    s.cp = await startControlPlane(s.infra, { port: 0, host: '127.0.0.1' });
    [s.owner, s.member, s.manager, s.stranger] = await Promise.all([createTestUser(s.cp), createTestUser(s.cp), createTestUser(s.cp), createTestUser(s.cp)]);
    for (const [u, role] of [[s.member, 'member'], [s.manager, 'manager']] as const) {
      const add = await api(s.cp, 'POST', `/api/v1/auth/workspaces/${s.owner.workspaceId}/members`, { token: s.owner.token, body: { email: u.email, role } });
      expect(add.status, JSON.stringify(add.body)).toBe(201);
    }
    s.hubspot.validKeys.add(HUBSPOT_KEY);
    s.zendesk.allow('acme', 'agent@acme.example', ZENDESK_TOKEN);
    s.stripe.validKeys.add(STRIPE_KEY);
    s.calcom.validKeys.add(CALCOM_KEY);
    s.calcom.slots.set(77, ['2030-03-04T09:00:00.000Z', '2030-03-04T09:30:00.000Z', '2030-03-05T14:00:00.000Z']);
  }, 60_000);

  afterAll(async () => {
    await s.cp?.close();
    await s.infra?.close();
    await Promise.all([s.hubspot, s.zendesk, s.stripe, s.calcom, ...(extra?.fakes ?? [])].map((f) => f.close()));
  });
  return s;
}
