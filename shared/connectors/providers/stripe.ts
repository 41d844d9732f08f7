/**
 * Stripe API (https://docs.stripe.com/api): bearer secret or restricted key, form-encoded bodies.
 * A payment link needs a Price, so `create_payment_link` creates an ad-hoc price (with inline
 * `product_data`) and then the link: two calls, the second only if the first succeeded.
 */
import { accountId, type ProviderAdapter } from './types.js';

const customerView = (c: any) => ({ id: c.id, email: c.email ?? null, name: c.name ?? null, phone: c.phone ?? null });

export const stripe: ProviderAdapter = {
  id: 'stripe',
  defaultBaseUrl: 'https://api.stripe.com',
  headers: (cred) => ({ authorization: `Bearer ${cred.api_key}` }),
  async verify({ http }) {
    const acct = await http.request<any>('/v1/account');
    const label = acct.settings?.dashboard?.display_name || acct.business_profile?.name || acct.email || accountId(acct.id, 'id');
    return { accountLabel: `Stripe ${label}` };
  },
  actions: {
    async find_customer({ http }, b) {
      const res = await http.request<{ data: any[] }>('/v1/customers', { query: { email: b.email, limit: 10 } });
      return { customers: res.data.map(customerView) };
    },
    async create_customer({ http }, b) {
      return customerView(await http.request('/v1/customers', { method: 'POST', form: { email: b.email, name: b.name, phone: b.phone } }));
    },
    async create_payment_link({ http }, b) {
      const price = await http.request<{ id: string }>('/v1/prices', {
        method: 'POST',
        form: { currency: b.currency, unit_amount: b.amount, 'product_data[name]': b.product_name },
      });
      const link = await http.request<{ id: string; url: string }>('/v1/payment_links', {
        method: 'POST',
        form: { 'line_items[0][price]': price.id, 'line_items[0][quantity]': b.quantity ?? 1 },
      });
      return { id: link.id, url: link.url, price_id: price.id, amount: b.amount, currency: b.currency };
    },
  },
};
