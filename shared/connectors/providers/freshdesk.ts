/**
 * Freshdesk API v2 (https://developers.freshdesk.com/api/): HTTP Basic with the API key as the
 * user and `X` as the password, on the tenant's `<name>.freshdesk.com` (the catalog pattern pins
 * the host to that suffix). Tickets are created open (status 2) at low priority (1) unless asked.
 */
import { accountId, basic, type ProviderAdapter } from './types.js';

const STATUS: Record<number, string> = { 2: 'open', 3: 'pending', 4: 'resolved', 5: 'closed' };
const PRIORITY: Record<number, string> = { 1: 'low', 2: 'medium', 3: 'high', 4: 'urgent' };
const PRIORITY_CODE: Record<string, number> = { low: 1, medium: 2, high: 3, urgent: 4 };

function ticketView(t: any) {
  return {
    id: t.id,
    subject: t.subject ?? null,
    status: STATUS[t.status] ?? (t.status === undefined ? null : String(t.status)),
    priority: PRIORITY[t.priority] ?? (t.priority === undefined ? null : String(t.priority)),
    description: t.description_text ?? t.description ?? null,
    updated_at: t.updated_at ?? null,
  };
}

export const freshdesk: ProviderAdapter = {
  id: 'freshdesk',
  defaultBaseUrl: 'https://{domain}',
  headers: (cred) => ({ authorization: basic(cred.api_key ?? '', 'X') }),
  async verify({ http, cred }) {
    const me = await http.request<{ id: number; contact?: { name?: string; email?: string } }>('/api/v2/agents/me');
    return { accountLabel: `${me.contact?.email ?? me.contact?.name ?? `agent ${accountId(me.id, 'id')}`} @ ${cred.domain}` };
  },
  actions: {
    async create_ticket({ http }, b) {
      const t = await http.request('/api/v2/tickets', {
        method: 'POST',
        json: { subject: b.subject, description: b.description, email: b.email, status: 2, priority: PRIORITY_CODE[b.priority ?? 'low'] },
      });
      return ticketView(t);
    },
    async find_ticket({ http }, b) {
      return ticketView(await http.request(`/api/v2/tickets/${Number(b.ticket_id)}`));
    },
    async add_note({ http }, b) {
      const n = await http.request<{ id: number; ticket_id?: number; private?: boolean; created_at?: string }>(`/api/v2/tickets/${Number(b.ticket_id)}/notes`, {
        method: 'POST',
        json: { body: b.body, private: b.private ?? true },
      });
      return { id: n.id, ticket_id: n.ticket_id ?? b.ticket_id, private: n.private ?? true, created_at: n.created_at ?? null };
    },
  },
};
