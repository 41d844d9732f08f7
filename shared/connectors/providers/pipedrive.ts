/**
 * Pipedrive API v1 (https://developers.pipedrive.com/docs/api/v1): the personal API token goes
 * in the `x-api-token` header (Pipedrive also takes `?api_token=`, but a header keeps the token
 * out of URLs). Answers are `{success, data}`; errors `{success: false, error, errorCode}`.
 */
import { accountId, type ProviderAdapter } from './types.js';

/** Search hits handed back to the model. */
const MAX_PERSONS = 10;

const values = (list: unknown) => (Array.isArray(list) ? list.map((x) => (typeof x === 'string' ? x : x?.value)).filter((v): v is string => typeof v === 'string' && v !== '') : []);

function personView(p: any) {
  return { id: p.id, name: p.name ?? null, emails: values(p.emails ?? p.email), phones: values(p.phones ?? p.phone), organization: p.organization?.name ?? p.org_name ?? null };
}

export const pipedrive: ProviderAdapter = {
  id: 'pipedrive',
  defaultBaseUrl: 'https://api.pipedrive.com',
  headers: (cred) => ({ 'x-api-token': cred.api_key ?? '' }),
  async verify({ http }) {
    const { data } = await http.request<{ data: { id: number; name?: string; email?: string; company_name?: string } }>('/v1/users/me');
    return { accountLabel: `${data.email ?? data.name ?? `user ${accountId(data.id, 'data.id')}`}${data.company_name ? ` @ ${data.company_name}` : ''}` };
  },
  actions: {
    async find_person({ http }, b) {
      const res = await http.request<{ data?: { items?: Array<{ item: any }> } }>('/v1/persons/search', {
        query: { term: b.term, fields: 'email,phone,name', limit: MAX_PERSONS },
      });
      const items = res.data?.items ?? [];
      return { persons: items.slice(0, MAX_PERSONS).map((i) => personView(i.item)) };
    },
    async create_person({ http }, b) {
      const { data } = await http.request<{ data: any }>('/v1/persons', {
        method: 'POST',
        json: {
          name: b.name,
          email: b.email ? [{ value: b.email, primary: true, label: 'work' }] : undefined,
          phone: b.phone ? [{ value: b.phone, primary: true, label: 'work' }] : undefined,
        },
      });
      return personView(data);
    },
    async create_deal({ http }, b) {
      const { data } = await http.request<{ data: any }>('/v1/deals', { method: 'POST', json: { title: b.title, value: b.value, person_id: b.person_id } });
      const personId = typeof data.person_id === 'object' && data.person_id !== null ? data.person_id.value : data.person_id;
      return { id: data.id, title: data.title, value: data.value ?? null, currency: data.currency ?? null, status: data.status ?? null, person_id: personId ?? null };
    },
  },
};
