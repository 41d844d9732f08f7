/**
 * Zendesk Support v2 fake. The tenant's subdomain is the first path segment (tests set
 * CONNECTOR_ZENDESK_BASE_URL to `<fake>/{subdomain}`), so an unknown subdomain answers 404 like
 * an unknown `<subdomain>.zendesk.com`. API tokens authenticate as `email/token:api_token`.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

export class ZendeskFake extends VendorFake {
  readonly subdomains = new Set<string>();
  readonly tickets = new Map<number, any>();
  private nextId = 35;

  /** Accepts `email` + `token` on `subdomain`. */
  allow(subdomain: string, email: string, token: string): void {
    this.subdomains.add(subdomain);
    this.validKeys.add(`${email}/token:${token}`);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.basic(rec);
  }

  protected override unauthorizedMessage() {
    return "Couldn't authenticate you";
  }

  protected errorBody(status: number, message: string) {
    if (status === 401) return { error: message };
    if (status === 404) return { error: 'RecordNotFound', description: message };
    if (status === 422) return { error: 'RecordInvalid', description: message };
    return { error: { title: status === 429 ? 'TooManyRequests' : 'InternalError', message } };
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const [, sub, ...rest] = rec.path.split('/');
    if (!sub || !this.subdomains.has(sub)) return this.fail(rec, res, 404, 'No help desk at this address');
    const at = `${rec.method} /${rest.join('/')}`;
    const [email] = (this.credentialOf(rec) ?? '').split('/token:');
    if (at === 'GET /api/v2/users/me.json') return this.sendJson(rec, res, 200, { user: { id: 9001, name: 'Support Agent', email, role: 'agent' } });
    if (at === 'POST /api/v2/tickets.json') {
      const t = rec.body?.ticket;
      if (!t?.comment?.body) return this.fail(rec, res, 422, 'Description: cannot be blank');
      const id = this.nextId++;
      const now = new Date().toISOString();
      const ticket = { id, url: `https://${sub}.zendesk.com/api/v2/tickets/${id}.json`, subject: t.subject, description: t.comment.body, priority: t.priority ?? null, status: 'new', requester: t.requester, comments: [t.comment], created_at: now, updated_at: now };
      this.tickets.set(id, ticket);
      return this.sendJson(rec, res, 201, { ticket });
    }
    const m = /^(GET|PUT) \/api\/v2\/tickets\/(\d+)\.json$/.exec(at);
    if (m) {
      const ticket = this.tickets.get(Number(m[2]));
      if (!ticket) return this.fail(rec, res, 404, 'Not found');
      if (m[1] === 'PUT') {
        if (rec.body?.ticket?.comment) ticket.comments.push(rec.body.ticket.comment);
        ticket.status = 'open';
        ticket.updated_at = new Date().toISOString();
      }
      return this.sendJson(rec, res, 200, { ticket });
    }
    return this.fail(rec, res, 404, `No route ${at}`);
  }
}
