/**
 * Pipedrive API v1 fake: the API token in the `x-api-token` header, `{success, data}` answers,
 * `{success: false, error, errorCode, error_info}` errors, persons search with Pipedrive's
 * two-character minimum, persons with `[{value, primary, label}]` emails and phones, and deals
 * whose `person_id` comes back as an object (as Pipedrive returns it).
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

export class PipedriveFake extends VendorFake {
  readonly persons: any[] = [];
  readonly deals: any[] = [];
  private nextId = 101;

  protected credentialOf(rec: HttpRecord) {
    const h = rec.headers['x-api-token'];
    return typeof h === 'string' ? h : undefined;
  }

  protected override unauthorizedMessage() {
    return 'unauthorized access';
  }

  protected errorBody(status: number, message: string) {
    return { success: false, error: message, errorCode: status, error_info: 'Please check developers.pipedrive.com' };
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const at = `${rec.method} ${rec.path}`;
    if (at === 'GET /v1/users/me') return this.sendJson(rec, res, 200, { success: true, data: { id: 12, name: 'Sales Bot', email: 'sales@acme.example', company_id: 7, company_name: 'Acme Ltd', company_domain: 'acme' } });
    if (at === 'GET /v1/persons/search') {
      const term = (rec.query.get('term') ?? '').toLowerCase();
      if (term.length < 2) return this.fail(rec, res, 400, 'Search term must be at least 2 characters long');
      const limit = Number(rec.query.get('limit') ?? 100);
      const hits = this.persons.filter((p) => [p.name, ...p.email.map((e: any) => e.value), ...p.phone.map((e: any) => e.value)].some((v) => String(v).toLowerCase().includes(term)));
      const items = hits.slice(0, limit).map((p) => ({
        result_score: 1,
        item: { id: p.id, type: 'person', name: p.name, phones: p.phone.map((x: any) => x.value), emails: p.email.map((x: any) => x.value), organization: null, owner: { id: 12 } },
      }));
      return this.sendJson(rec, res, 200, { success: true, data: { items }, additional_data: { pagination: { start: 0, limit, more_items_in_collection: hits.length > limit } } });
    }
    if (at === 'POST /v1/persons') {
      if (!rec.body?.name) return this.fail(rec, res, 400, 'Name must be given.');
      const p = { id: this.nextId++, name: rec.body.name, email: rec.body.email ?? [], phone: rec.body.phone ?? [], org_name: null };
      this.persons.push(p);
      return this.sendJson(rec, res, 201, { success: true, data: p });
    }
    if (at === 'POST /v1/deals') {
      const b = rec.body ?? {};
      if (!b.title) return this.fail(rec, res, 400, 'Title must be given.');
      const person = b.person_id === undefined ? undefined : this.persons.find((p) => p.id === b.person_id);
      if (b.person_id !== undefined && !person) return this.fail(rec, res, 400, 'Person not found.');
      const d = { id: this.nextId++, title: b.title, value: b.value ?? 0, currency: 'USD', status: 'open', person_id: person ? { name: person.name, value: person.id } : null };
      this.deals.push(d);
      return this.sendJson(rec, res, 201, { success: true, data: d });
    }
    return this.fail(rec, res, 404, `Unknown method ${at}`);
  }
}
