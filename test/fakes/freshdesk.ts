/**
 * Freshdesk API v2 fake. The tenant's domain is the first path segment (tests set
 * CONNECTOR_FRESHDESK_BASE_URL to `<fake>/{domain}`); Basic `api_key:X`; errors
 * `{code, message}` or `{description, errors: [{field, message, code}]}` for validation, and an
 * unknown ticket is a 404 with an empty body, as Freshdesk answers.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

export class FreshdeskFake extends VendorFake {
  readonly domains = new Set<string>();
  readonly tickets = new Map<number, any>();
  private nextId = 1;

  /** Accepts `apiKey` on `domain` (`<name>.freshdesk.com`). */
  allow(domain: string, apiKey: string): void {
    this.domains.add(domain);
    this.validKeys.add(`${apiKey}:X`);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.basic(rec);
  }

  protected override unauthorizedMessage() {
    return 'You have to be logged in to perform this action.';
  }

  protected errorBody(status: number, message: string) {
    const code = status === 401 ? 'invalid_credentials' : status === 429 ? 'rate_limit_exceeded' : status === 404 ? 'not_found' : 'internal_error';
    return { code, message };
  }

  private invalid(rec: HttpRecord, res: ServerResponse, field: string, message: string): void {
    this.sendJson(rec, res, 400, { description: 'Validation failed', errors: [{ field, message, code: 'invalid_value' }] });
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const [, domain, ...rest] = rec.path.split('/');
    if (!domain || !this.domains.has(domain)) return this.fail(rec, res, 404, 'There is no helpdesk here');
    const at = `${rec.method} /${rest.join('/')}`;
    if (at === 'GET /api/v2/agents/me') return this.sendJson(rec, res, 200, { id: 43000123, available: true, occasional: false, contact: { name: 'Desk Bot', email: 'desk@acme.example', active: true } });
    if (at === 'POST /api/v2/tickets') {
      const b = rec.body ?? {};
      if (!/^[^@\s]+@[^@\s]+$/.test(b.email ?? '')) return this.invalid(rec, res, 'email', 'It should be a valid email address');
      if (![2, 3, 4, 5].includes(b.status)) return this.invalid(rec, res, 'status', 'It should be one of these values: 2,3,4,5');
      if (![1, 2, 3, 4].includes(b.priority)) return this.invalid(rec, res, 'priority', 'It should be one of these values: 1,2,3,4');
      const id = this.nextId++;
      const now = new Date().toISOString();
      const t = { id, subject: b.subject, description: `<div>${b.description}</div>`, description_text: b.description, status: b.status, priority: b.priority, requester_id: 9000 + id, email: b.email, notes: [] as any[], created_at: now, updated_at: now };
      this.tickets.set(id, t);
      return this.sendJson(rec, res, 201, t);
    }
    const m = /^(GET|POST) \/api\/v2\/tickets\/(\d+)(\/notes)?$/.exec(at);
    if (m) {
      const t = this.tickets.get(Number(m[2]));
      if (!t) {
        rec.status = 404;
        res.writeHead(404);
        return void res.end();
      }
      if (m[1] === 'GET' && !m[3]) return this.sendJson(rec, res, 200, t);
      if (m[1] === 'POST' && m[3]) {
        if (!rec.body?.body) return this.invalid(rec, res, 'body', 'It should not be blank');
        const n = { id: 5000 + t.notes.length, ticket_id: t.id, body: `<div>${rec.body.body}</div>`, body_text: rec.body.body, private: rec.body.private ?? true, created_at: new Date().toISOString() };
        t.notes.push(n);
        return this.sendJson(rec, res, 201, n);
      }
    }
    return this.fail(rec, res, 404, `No route ${at}`);
  }
}
