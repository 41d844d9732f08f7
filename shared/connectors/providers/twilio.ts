/**
 * Twilio (https://www.twilio.com/docs/usage/api): HTTP Basic `account_sid:auth_token`,
 * form-encoded bodies, `{code, message, more_info, status}` errors. Messages live on
 * api.twilio.com (the base URL); Lookup v2 lives on lookups.twilio.com, declared as the extra
 * host `lookups` (override: CONNECTOR_TWILIO_LOOKUPS_BASE_URL), so both go through the same
 * VendorHttp and outbound policy.
 */
import { accountId, basic, type ProviderAdapter } from './types.js';

/** Messages handed back to the model: the recent few. */
const MAX_MESSAGES = 20;

/** The catalog's phone pattern allows spaces, dashes and parentheses; Twilio wants E.164. */
const e164 = (n: string) => n.replace(/[\s()-]/g, '');

const account = (sid: string) => `/2010-04-01/Accounts/${encodeURIComponent(sid)}`;

function messageView(m: any) {
  return { sid: m.sid, status: m.status ?? null, to: m.to ?? null, from: m.from ?? null, body: m.body ?? null, direction: m.direction ?? null, date_created: m.date_created ?? null };
}

export const twilio: ProviderAdapter = {
  id: 'twilio',
  defaultBaseUrl: 'https://api.twilio.com',
  extraBaseUrls: { lookups: 'https://lookups.twilio.com' },
  headers: (cred) => ({ authorization: basic(cred.account_sid ?? '', cred.auth_token ?? '') }),
  async verify({ http, cred }) {
    const acct = await http.request<{ sid: string; friendly_name?: string; status?: string }>(`${account(cred.account_sid!)}.json`);
    const sid = accountId(acct.sid, 'sid');
    return { accountLabel: `${acct.friendly_name ?? sid} (${sid}), from ${cred.from_number}` };
  },
  actions: {
    async send_sms({ http, cred }, b) {
      const m = await http.request(`${account(cred.account_sid!)}/Messages.json`, { method: 'POST', form: { To: e164(b.to), From: cred.from_number, Body: b.body } });
      return messageView(m);
    },
    async lookup_number({ http }, b) {
      const r = await http.request<any>(`/v2/PhoneNumbers/${encodeURIComponent(e164(b.number))}`, { base: 'lookups', query: { Fields: 'line_type_intelligence' } });
      return {
        phone_number: r.phone_number ?? null,
        valid: r.valid ?? null,
        country_code: r.country_code ?? null,
        national_format: r.national_format ?? null,
        line_type: r.line_type_intelligence?.type ?? null,
        carrier: r.line_type_intelligence?.carrier_name ?? null,
      };
    },
    async list_messages({ http, cred }, b) {
      const r = await http.request<{ messages: any[] }>(`${account(cred.account_sid!)}/Messages.json`, { query: { To: e164(b.to), PageSize: MAX_MESSAGES } });
      return { messages: (r.messages ?? []).slice(0, MAX_MESSAGES).map(messageView) };
    },
  },
};
