/**
 * The catalog is data checked at start-up: the shipped one loads, every shipped adapter serves
 * exactly its provider's actions, and a broken catalog (bad shape, duplicate id or name, action
 * outside the provider's products, uncompilable parameters, bad credential pattern) or a base-URL
 * override naming no provider stops start-up with a message naming the problem.
 */
import { describe, expect, it } from 'vitest';
import { CATALOG_DATA } from '../../../shared/connectors/catalog-data.js';
import { CatalogError, loadCatalog } from '../../../shared/connectors/catalog.js';
import { createConnectorsDomain } from '../../../control-plane/connectors/index.js';
import { checkAdapters } from '../../../shared/connectors/index.js';
import { ADAPTERS } from '../../../shared/connectors/providers/index.js';
import { checkActionBody, checkCredentials } from '../../../shared/connectors/input.js';
import { VendorError, vendorHttp, vendorReason } from '../../../shared/connectors/providers/http.js';
import { createOutboundClient } from '../../../shared/outbound/index.js';

const clone = () => JSON.parse(JSON.stringify(CATALOG_DATA));

describe('connector catalog', () => {
  it('loads the shipped catalog: every provider the issue names, at least 3 actions each', () => {
    const c = loadCatalog(CATALOG_DATA);
    expect(c.providers.map((p) => p.id)).toEqual(['google_workspace', 'hubspot', 'slack', 'calcom', 'jira', 'pipedrive', 'twilio', 'stripe', 'zendesk', 'freshdesk', 'servicenow']);
    for (const p of c.providers) expect(p.actions.length, p.id).toBeGreaterThanOrEqual(3);
    expect(c.find('Cal.com')?.id).toBe('calcom');
    expect(c.find('  HUBSPOT ')?.id).toBe('hubspot');
    expect(c.find('google_workspace')?.credential_fields).toEqual([]);
    expect(() => checkAdapters(c, ADAPTERS)).not.toThrow();
  });

  it.each([
    ['a missing field', (d: any) => delete d.providers[1].actions, /\/providers\/1: must have required property 'actions'/],
    ['an unknown product', (d: any) => (d.providers[1].products = ['crm', 'toasters']), /\/providers\/1\/products\/1/],
    ['a duplicate id', (d: any) => (d.providers[2].id = 'hubspot'), /"hubspot" is used twice/],
    ['an action outside its products', (d: any) => (d.providers[1].actions[0].product = 'payments'), /hubspot\)\/actions\/find_contact: product payments/],
    ['uncompilable parameters', (d: any) => (d.providers[1].actions[0].parameters = { type: 'object', properties: { x: { type: 12 } } }), /actions\/find_contact\/parameters/],
    ['a bad credential pattern', (d: any) => (d.providers[1].credential_fields[0].pattern = '(['), /credential_fields\/api_key\/pattern/],
    ['a key provider without fields', (d: any) => (d.providers[1].credential_fields = []), /credential_fields must be listed/],
  ])('refuses %s with the path of the problem', (_what, breakIt, message) => {
    const d = clone();
    breakIt(d);
    expect(() => loadCatalog(d)).toThrow(CatalogError);
    expect(() => loadCatalog(d)).toThrow(message);
  });

  it('refuses an adapter that misses one of its catalog actions', () => {
    const d = clone();
    d.providers[1].actions.push({ name: 'merge_contacts', description: 'x', parameters: { type: 'object' }, product: 'crm' });
    expect(() => checkAdapters(loadCatalog(d), ADAPTERS)).toThrow(/hubspot does not match its catalog actions \(missing: merge_contacts/);
  });

  it('refuses a CONNECTOR_<ID>_BASE_URL naming no provider at start-up', () => {
    const config = { connectorBaseUrls: { hubspto: 'http://127.0.0.1:1' }, connectorTimeoutMs: 1000 };
    expect(() => createConnectorsDomain({ config, outbound: {}, auth: {} } as never)).toThrow(/CONNECTOR_HUBSPTO_BASE_URL names no provider/);
  });
});

describe('connector input', () => {
  const catalog = loadCatalog(CATALOG_DATA);
  it('credentials: required, trimmed, pattern-checked, value never echoed', () => {
    const z = catalog.find('zendesk')!;
    expect(checkCredentials(z, { subdomain: ' acme ', email: 'a@b.c', api_token: 't0k', extra: 'ignored' })).toEqual({ subdomain: 'acme', email: 'a@b.c', api_token: 't0k' });
    expect(() => checkCredentials(z, { subdomain: 'acme', email: 'a@b.c' })).toThrow('api_token: is required');
    expect(() => checkCredentials(z, { subdomain: 'evil.example/x', email: 'a@b.c', api_token: 't' })).toThrow(/^subdomain: is not in the expected form: letters, digits and dashes$/);
    expect(() => checkCredentials(z, { subdomain: 'acme', email: 'a@b.c', api_token: 5 })).toThrow('api_token: must be a string');
  });

  it('action bodies: the first problem, naming the field', () => {
    const v = catalog.validator('calcom', 'book')!;
    const ok = { event_type_id: 1, start: '2030-01-01T00:00:00Z', name: 'A', email: 'a@example.com' };
    expect(checkActionBody(v, ok)).toBe(ok);
    expect(() => checkActionBody(v, { ...ok, email: 'nope' })).toThrow(/^email: must match format "email"/);
    expect(() => checkActionBody(v, { ...ok, event_type_id: 0 })).toThrow(/^event_type_id: must be >= 1/);
    expect(() => checkActionBody(v, { name: 'A' })).toThrow(/is required$/);
  });

  it("vendor reasons come from each vendor's own error field", () => {
    expect(vendorReason({ error: { message: 'Invalid API Key provided', type: 'invalid_request_error' } })).toBe('Invalid API Key provided');
    expect(vendorReason({ status: 'error', message: 'Authentication credentials not found.' })).toBe('Authentication credentials not found.');
    expect(vendorReason({ error: "Couldn't authenticate you" })).toBe("Couldn't authenticate you");
    expect(vendorReason({ error: 'RecordNotFound', description: 'Not found' })).toBe('Not found');
    expect(vendorReason('<html>')).toBeUndefined();
  });
});

describe('vendor requests go through the outbound address policy', () => {
  it('refuses an internal vendor address unless OUTBOUND_ALLOW_CIDRS allows it, and scrubs credentials from reasons', async () => {
    const outbound = createOutboundClient({ allowCidrs: [] });
    try {
      const http = vendorHttp({ outbound, baseUrl: 'http://127.0.0.1:9', headers: { authorization: 'Bearer sk_test_secretvalue' }, secrets: ['sk_test_secretvalue'], timeoutMs: 1000 });
      const err = await http.request('/v1/account').catch((e: unknown) => e);
      expect(err).toBeInstanceOf(VendorError);
      expect((err as VendorError).kind).toBe('rejected');
      expect((err as VendorError).reason).not.toContain('sk_test_secretvalue');
    } finally {
      await outbound.close();
    }
  });
});
