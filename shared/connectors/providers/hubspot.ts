/**
 * HubSpot CRM v3 (https://developers.hubspot.com/docs/api/crm/contacts). Private app tokens are
 * bearer tokens. Notes and deals are associated to a contact with HubSpot's default association
 * types (note -> contact 202, deal -> contact 3).
 */
import { accountId, type ProviderAdapter } from './types.js';

const CONTACT_PROPS = ['email', 'firstname', 'lastname', 'phone'];

function contactView(r: { id: string; properties?: Record<string, string | null> }) {
  const p = r.properties ?? {};
  return { id: r.id, email: p.email ?? null, first_name: p.firstname ?? null, last_name: p.lastname ?? null, phone: p.phone ?? null };
}

const toContact = (id: string, typeId: number) => [{ to: { id }, types: [{ associationCategory: 'HUBSPOT_DEFINED', associationTypeId: typeId }] }];

export const hubspot: ProviderAdapter = {
  id: 'hubspot',
  defaultBaseUrl: 'https://api.hubapi.com',
  headers: (cred) => ({ authorization: `Bearer ${cred.api_key}` }),
  async verify({ http }) {
    const info = await http.request<{ portalId: number; uiDomain?: string }>('/account-info/v3/details');
    return { accountLabel: `HubSpot portal ${accountId(info.portalId, 'portalId')}` };
  },
  actions: {
    async find_contact({ http }, b) {
      const filters = [];
      if (b.email) filters.push({ propertyName: 'email', operator: 'EQ', value: b.email });
      if (b.phone) filters.push({ propertyName: 'phone', operator: 'EQ', value: b.phone });
      // One filter group per criterion: groups are ORed, so either identifier finds the contact.
      const res = await http.request<{ total: number; results: any[] }>('/crm/v3/objects/contacts/search', {
        method: 'POST',
        json: { filterGroups: filters.map((f) => ({ filters: [f] })), properties: CONTACT_PROPS, limit: 10 },
      });
      return { total: res.total, contacts: res.results.map(contactView) };
    },
    async create_contact({ http }, b) {
      const res = await http.request('/crm/v3/objects/contacts', {
        method: 'POST',
        json: { properties: { email: b.email, phone: b.phone, firstname: b.first_name, lastname: b.last_name } },
      });
      return contactView(res);
    },
    async create_note({ http, now }, b) {
      const res = await http.request<{ id: string }>('/crm/v3/objects/notes', {
        method: 'POST',
        json: { properties: { hs_note_body: b.body, hs_timestamp: new Date(now()).toISOString() }, associations: toContact(b.contact_id, 202) },
      });
      return { id: res.id, contact_id: b.contact_id };
    },
    async create_deal({ http }, b) {
      const res = await http.request<{ id: string; properties?: Record<string, string> }>('/crm/v3/objects/deals', {
        method: 'POST',
        json: {
          properties: { dealname: b.name, amount: b.amount === undefined ? undefined : String(b.amount), pipeline: 'default', dealstage: 'appointmentscheduled' },
          associations: b.contact_id ? toContact(b.contact_id, 3) : undefined,
        },
      });
      return { id: res.id, name: res.properties?.dealname ?? b.name };
    },
  },
};
