/**
 * HubSpot CRM v3 fake: account info, contacts (create, search with OR-ed filter groups), notes
 * and deals with associations. Error bodies as HubSpot sends them (`status`, `message`,
 * `category`, `correlationId`).
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

interface Obj {
  id: string;
  properties: Record<string, string | null>;
  associations?: unknown;
}

export class HubSpotFake extends VendorFake {
  portalId = 4455667;
  readonly contacts: Obj[] = [];
  readonly notes: Obj[] = [];
  readonly deals: Obj[] = [];
  private nextId = 501;

  protected credentialOf(rec: HttpRecord) {
    return this.bearer(rec);
  }

  protected override unauthorizedMessage() {
    return 'Authentication credentials not found. This API supports OAuth 2.0 authentication.';
  }

  protected errorBody(status: number, message: string) {
    const category = status === 401 ? 'INVALID_AUTHENTICATION' : status === 429 ? 'RATE_LIMITS' : status === 404 ? 'OBJECT_NOT_FOUND' : status === 400 ? 'VALIDATION_ERROR' : 'INTERNAL_ERROR';
    return { status: 'error', message, correlationId: 'c0ffee00-0000-4000-8000-000000000000', category };
  }

  private create(list: Obj[], body: any): Obj {
    const props: Record<string, string | null> = {};
    for (const [k, v] of Object.entries(body?.properties ?? {})) if (v !== undefined && v !== null) props[k] = String(v);
    const o = { id: String(this.nextId++), properties: props, associations: body?.associations };
    list.push(o);
    return o;
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const at = `${rec.method} ${rec.path}`;
    if (at === 'GET /account-info/v3/details') return this.sendJson(rec, res, 200, { portalId: this.portalId, accountType: 'STANDARD', timeZone: 'US/Eastern', companyCurrency: 'USD', uiDomain: 'app.hubspot.com', dataHostingLocation: 'na1' });
    if (at === 'POST /crm/v3/objects/contacts') {
      const email = rec.body?.properties?.email;
      if (this.contacts.some((c) => c.properties.email === email)) return this.fail(rec, res, 409, `Contact already exists. Existing ID: ${this.contacts.find((c) => c.properties.email === email)!.id}`);
      const o = this.create(this.contacts, rec.body);
      return this.sendJson(rec, res, 201, { ...o, createdAt: new Date().toISOString(), archived: false });
    }
    if (at === 'POST /crm/v3/objects/contacts/search') {
      const groups: Array<{ filters: Array<{ propertyName: string; operator: string; value: string }> }> = rec.body?.filterGroups ?? [];
      const hits = this.contacts.filter((c) => groups.some((g) => g.filters.every((f) => f.operator === 'EQ' && c.properties[f.propertyName] === f.value)));
      return this.sendJson(rec, res, 200, { total: hits.length, results: hits.slice(0, rec.body?.limit ?? 10) });
    }
    if (at === 'POST /crm/v3/objects/notes') {
      if (!rec.body?.properties?.hs_timestamp) return this.fail(rec, res, 400, 'Property values were not valid: hs_timestamp is required');
      return this.sendJson(rec, res, 201, this.create(this.notes, rec.body));
    }
    if (at === 'POST /crm/v3/objects/deals') return this.sendJson(rec, res, 201, this.create(this.deals, rec.body));
    return this.fail(rec, res, 404, `Unable to route ${at}`);
  }
}
