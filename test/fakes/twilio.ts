/**
 * Twilio fake for both hosts the adapter uses: the REST API (`/2010-04-01/...`, Basic
 * `account_sid:auth_token`, form-encoded bodies) and Lookup v2, which tests mount under
 * `/lookups` (CONNECTOR_TWILIO_LOOKUPS_BASE_URL = `<fake>/lookups`) so a lookup sent to the
 * main host is a 404. Errors are Twilio's `{code, message, more_info, status}`.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

const CODE: Record<number, number> = { 401: 20003, 404: 20404, 429: 20429, 500: 20500 };

export class TwilioFake extends VendorFake {
  /** Numbers of the account that may send. */
  readonly numbers = new Set<string>();
  readonly messages: any[] = [];
  private n = 0;

  allow(accountSid: string, authToken: string): void {
    this.validKeys.add(`${accountSid}:${authToken}`);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.basic(rec);
  }

  protected override unauthorizedMessage() {
    return 'Authenticate';
  }

  protected errorBody(status: number, message: string) {
    const code = CODE[status] ?? 21211;
    return { code, message, more_info: `https://www.twilio.com/docs/errors/${code}`, status };
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const sid = (this.credentialOf(rec) ?? '').split(':')[0]!;
    const form = new URLSearchParams(rec.rawBody);
    const lookup = /^\/lookups\/v2\/PhoneNumbers\/([^/]+)$/.exec(rec.path);
    if (rec.method === 'GET' && lookup) {
      const n = decodeURIComponent(lookup[1]!);
      const valid = /^\+[1-9][0-9]{6,14}$/.test(n);
      return this.sendJson(rec, res, 200, {
        calling_country_code: valid ? '1' : null,
        country_code: valid ? 'US' : null,
        phone_number: n,
        national_format: valid ? `(${n.slice(2, 5)}) ${n.slice(5, 8)}-${n.slice(8)}` : null,
        valid,
        validation_errors: valid ? [] : ['INVALID_LENGTH'],
        caller_name: null,
        line_type_intelligence: rec.query.get('Fields')?.includes('line_type_intelligence') ? { carrier_name: 'Acme Wireless', type: 'mobile', error_code: null } : null,
        url: `https://lookups.twilio.com/v2/PhoneNumbers/${n}`,
      });
    }
    const base = `/2010-04-01/Accounts/${sid}`;
    if (!rec.path.startsWith(base)) return this.fail(rec, res, 404, `The requested resource ${rec.path} was not found`);
    const at = `${rec.method} ${rec.path.slice(base.length)}`;
    if (at === 'GET .json') return this.sendJson(rec, res, 200, { sid, friendly_name: 'Acme Clinic', status: 'active', type: 'Full', date_created: 'Thu, 01 Jun 2023 10:00:00 +0000' });
    if (at === 'POST /Messages.json') {
      if (rec.headers['content-type'] !== 'application/x-www-form-urlencoded') return this.fail(rec, res, 400, 'Unsupported content type');
      const to = form.get('To') ?? '';
      const from = form.get('From') ?? '';
      if (!/^\+[1-9][0-9]{6,14}$/.test(to)) return this.fail(rec, res, 400, `The 'To' number ${to} is not a valid phone number.`);
      if (!this.numbers.has(from)) return this.fail(rec, res, 400, `The From phone number ${from} is not a valid, SMS-capable inbound phone number or short code for your account.`);
      if (!form.get('Body')) return this.fail(rec, res, 400, 'Message body is required.');
      const m = { sid: `SM${(++this.n).toString(16).padStart(32, '0')}`, account_sid: sid, to, from, body: form.get('Body'), status: 'queued', direction: 'outbound-api', date_created: new Date().toUTCString() };
      this.messages.unshift(m);
      return this.sendJson(rec, res, 201, m);
    }
    if (at === 'GET /Messages.json') {
      const size = Number(rec.query.get('PageSize') ?? 50);
      const to = rec.query.get('To');
      const list = this.messages.filter((m) => !to || m.to === to).slice(0, size);
      return this.sendJson(rec, res, 200, { messages: list, page: 0, page_size: size, first_page_uri: `${base}/Messages.json?PageSize=${size}&Page=0`, next_page_uri: null });
    }
    return this.fail(rec, res, 404, `The requested resource ${rec.path} was not found`);
  }
}
