/**
 * ServiceNow Table API (https://developer.servicenow.com/dev.do#!/reference/api/latest/rest/c_TableAPI):
 * HTTP Basic with an integration user, on `<instance>.service-now.com` (the catalog pattern keeps
 * the instance a DNS label). Verify reads one incident: it proves the login AND the read access
 * to the table every action uses (a user without it would connect, then fail on every call).
 * Answers are `{result}`; errors `{error: {message, detail}, status: "failure"}`.
 */
import { VendorError } from './http.js';
import { basic, type ProviderAdapter } from './types.js';

const TABLE = '/api/now/table/incident';
const FIELDS = 'sys_id,number,short_description,description,state,urgency,priority,sys_updated_on';

function incidentView(r: any) {
  return {
    sys_id: r.sys_id,
    number: r.number ?? null,
    short_description: r.short_description ?? null,
    description: r.description || null,
    state: r.state ?? null,
    urgency: r.urgency ?? null,
    priority: r.priority ?? null,
    updated_on: r.sys_updated_on ?? null,
  };
}

export const servicenow: ProviderAdapter = {
  id: 'servicenow',
  defaultBaseUrl: 'https://{instance}.service-now.com',
  headers: (cred) => ({ authorization: basic(cred.username ?? '', cred.password ?? '') }),
  async verify({ http, cred }) {
    await http.request(TABLE, { query: { sysparm_limit: 1, sysparm_fields: 'sys_id' } });
    return { accountLabel: `${cred.username} @ ${cred.instance}.service-now.com` };
  },
  actions: {
    async create_incident({ http }, b) {
      const { result } = await http.request<{ result: any }>(TABLE, {
        method: 'POST',
        query: { sysparm_fields: FIELDS },
        json: { short_description: b.short_description, description: b.description, urgency: b.urgency },
      });
      return incidentView(result);
    },
    async find_incident({ http }, b) {
      // The catalog pattern keeps `number` letters+digits, so it cannot add a clause (^OR...) to the query.
      const { result } = await http.request<{ result: any[] }>(TABLE, { query: { sysparm_query: `number=${b.number}`, sysparm_limit: 1, sysparm_fields: FIELDS } });
      if (!result?.[0]) throw new VendorError('not_found', `no incident ${b.number}`, 404);
      return incidentView(result[0]);
    },
    async add_work_note({ http }, b) {
      const { result } = await http.request<{ result: any }>(`${TABLE}/${encodeURIComponent(b.sys_id)}`, {
        method: 'PATCH',
        query: { sysparm_fields: FIELDS },
        json: { work_notes: b.note },
      });
      return incidentView(result);
    },
  },
};
