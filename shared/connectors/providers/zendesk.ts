/**
 * Zendesk Support API v2 (https://developer.zendesk.com/api-reference/ticketing/). API tokens
 * authenticate as `{email}/token:{api_token}` with HTTP Basic; the host is the tenant's own
 * subdomain (the catalog pattern keeps it a bare DNS label, so it cannot steer the host).
 */
import { VendorError } from './http.js';
import { basic, type ProviderAdapter } from './types.js';

function ticketView(t: any) {
  return { id: t.id, subject: t.subject ?? null, status: t.status ?? null, priority: t.priority ?? null, description: t.description ?? null, updated_at: t.updated_at ?? null };
}

export const zendesk: ProviderAdapter = {
  id: 'zendesk',
  defaultBaseUrl: 'https://{subdomain}.zendesk.com',
  headers: (cred) => ({ authorization: basic(`${cred.email}/token`, cred.api_token ?? '') }),
  async verify({ http, cred }) {
    const { user } = await http.request<{ user: { id: number | null; email?: string; name?: string } }>('/api/v2/users/me.json');
    // Zendesk answers an unauthenticated /users/me with the anonymous user (id null), not a 401.
    if (!user?.id) throw new VendorError('auth', 'Zendesk did not accept the email and API token (anonymous user)', 401);
    return { accountLabel: `${user.email ?? cred.email} @ ${cred.subdomain}.zendesk.com` };
  },
  actions: {
    async create_ticket({ http }, b) {
      const requester = b.requester_email ? { email: b.requester_email, name: b.requester_name ?? b.requester_email } : undefined;
      const { ticket } = await http.request('/api/v2/tickets.json', {
        method: 'POST',
        json: { ticket: { subject: b.subject, comment: { body: b.body }, priority: b.priority, requester } },
      });
      return ticketView(ticket);
    },
    async find_ticket({ http }, b) {
      const { ticket } = await http.request(`/api/v2/tickets/${Number(b.ticket_id)}.json`);
      return ticketView(ticket);
    },
    async add_comment({ http }, b) {
      const { ticket } = await http.request(`/api/v2/tickets/${Number(b.ticket_id)}.json`, {
        method: 'PUT',
        json: { ticket: { comment: { body: b.body, public: b.public ?? true } } },
      });
      return ticketView(ticket);
    },
  },
};
