/**
 * ServiceNow Table API fake (incident table). The instance is the first path segment (tests set
 * CONNECTOR_SERVICENOW_BASE_URL to `<fake>/{instance}`); Basic `username:password`; answers
 * `{result}`; errors `{error: {message, detail}, status: "failure"}`; `sysparm_query` supports
 * the `number=<n>` form the adapter sends, and `sysparm_fields` trims the record as ServiceNow does.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

const TABLE = '/api/now/table/incident';

export class ServiceNowFake extends VendorFake {
  readonly instances = new Set<string>();
  readonly incidents: any[] = [];
  private n = 0;

  allow(instance: string, username: string, password: string): void {
    this.instances.add(instance);
    this.validKeys.add(`${username}:${password}`);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.basic(rec);
  }

  protected override unauthorizedMessage() {
    return 'User Not Authenticated';
  }

  protected errorBody(status: number, message: string) {
    const detail = status === 401 ? 'Required to provide Auth information' : status === 404 ? "Record doesn't exist or ACL restricts the record retrieval" : null;
    return { error: { message, detail }, status: 'failure' };
  }

  private fields(rec: HttpRecord, r: any): any {
    const list = rec.query.get('sysparm_fields');
    if (!list) return r;
    return Object.fromEntries(list.split(',').map((f) => [f, r[f] ?? '']));
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const [, instance, ...rest] = rec.path.split('/');
    if (!instance || !this.instances.has(instance)) return this.fail(rec, res, 404, 'Instance not found');
    const path = `/${rest.join('/')}`;
    if (rec.method === 'GET' && path === TABLE) {
      const q = rec.query.get('sysparm_query');
      if (q && !/^number=[A-Z]+[0-9]+$/.test(q)) return this.fail(rec, res, 400, `fake supports only number=<n>, got ${q}`);
      const hits = this.incidents.filter((i) => !q || `number=${i.number}` === q).slice(0, Number(rec.query.get('sysparm_limit') ?? 10000));
      return this.sendJson(rec, res, 200, { result: hits.map((h) => this.fields(rec, h)) });
    }
    if (rec.method === 'POST' && path === TABLE) {
      const b = rec.body ?? {};
      if (!b.short_description) return this.fail(rec, res, 400, 'Mandatory field short_description missing');
      this.n += 1;
      const i = {
        sys_id: this.n.toString(16).padStart(32, 'a'),
        number: `INC${String(10000 + this.n).padStart(7, '0')}`,
        short_description: b.short_description,
        description: b.description ?? '',
        urgency: b.urgency ?? '3',
        priority: '4',
        state: '1',
        work_notes: [] as string[],
        sys_updated_on: '2030-01-01 10:00:00',
      };
      this.incidents.push(i);
      return this.sendJson(rec, res, 201, { result: this.fields(rec, i) });
    }
    const m = /^\/api\/now\/table\/incident\/([0-9a-f]{32})$/.exec(path);
    if (rec.method === 'PATCH' && m) {
      const i = this.incidents.find((x) => x.sys_id === m[1]);
      if (!i) return this.fail(rec, res, 404, 'No Record found');
      if (rec.body?.work_notes) i.work_notes.push(rec.body.work_notes);
      i.state = '2';
      return this.sendJson(rec, res, 200, { result: this.fields(rec, i) });
    }
    return this.fail(rec, res, 400, `Invalid table API path ${path}`);
  }
}
