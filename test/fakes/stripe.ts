/**
 * Stripe fake: form-encoded bodies, `{error: {message, type}}` errors, a masked key in the 401
 * message (as Stripe does), account, customers (list by email, create), prices with inline
 * `product_data`, and payment links that require an existing price.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

export class StripeFake extends VendorFake {
  readonly customers: any[] = [];
  readonly prices = new Map<string, any>();
  readonly links: any[] = [];
  private n = 0;

  protected credentialOf(rec: HttpRecord) {
    return this.bearer(rec);
  }

  protected errorBody(status: number, message: string) {
    const type = status === 401 || status === 400 || status === 404 ? 'invalid_request_error' : status === 429 ? 'rate_limit_error' : 'api_error';
    return { error: { message, type } };
  }

  protected override unauthorizedMessage() {
    return 'Invalid API Key provided';
  }

  private id(prefix: string): string {
    return `${prefix}_${(++this.n).toString().padStart(14, '0')}`;
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const form = new URLSearchParams(rec.rawBody);
    if (rec.method === 'POST' && rec.headers['content-type'] !== 'application/x-www-form-urlencoded') return this.fail(rec, res, 400, 'Invalid request (check that your POST content type is application/x-www-form-urlencoded)');
    const at = `${rec.method} ${rec.path}`;
    if (at === 'GET /v1/account') return this.sendJson(rec, res, 200, { id: 'acct_1Fake', object: 'account', email: 'billing@example.com', settings: { dashboard: { display_name: 'Acme Dental' } } });
    if (at === 'GET /v1/customers') {
      const email = rec.query.get('email');
      const data = this.customers.filter((c) => !email || c.email === email).slice(0, Number(rec.query.get('limit') ?? 10));
      return this.sendJson(rec, res, 200, { object: 'list', url: '/v1/customers', has_more: false, data });
    }
    if (at === 'POST /v1/customers') {
      const c = { id: this.id('cus'), object: 'customer', email: form.get('email'), name: form.get('name'), phone: form.get('phone') };
      this.customers.push(c);
      return this.sendJson(rec, res, 200, c);
    }
    if (at === 'POST /v1/prices') {
      const amount = Number(form.get('unit_amount'));
      if (!form.get('currency') || !Number.isInteger(amount)) return this.fail(rec, res, 400, 'Missing required param: currency.');
      const p = { id: this.id('price'), object: 'price', currency: form.get('currency'), unit_amount: amount, product: this.id('prod'), product_name: form.get('product_data[name]') };
      this.prices.set(p.id, p);
      return this.sendJson(rec, res, 200, p);
    }
    if (at === 'POST /v1/payment_links') {
      const price = form.get('line_items[0][price]');
      if (!price || !this.prices.has(price)) return this.fail(rec, res, 400, `No such price: '${price}'`);
      const id = this.id('plink');
      const link = { id, object: 'payment_link', active: true, url: `https://buy.stripe.com/test_${id}`, line_items: [{ price, quantity: Number(form.get('line_items[0][quantity]')) }] };
      this.links.push(link);
      return this.sendJson(rec, res, 200, link);
    }
    return this.fail(rec, res, 404, `Unrecognized request URL (${rec.method}: ${rec.path}).`);
  }
}
