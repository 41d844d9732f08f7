/**
 * Slack Web API fake. Like Slack, a refused token or an unknown channel is HTTP 200 with
 * `{ok: false, error: "<code>"}` (a revoked token says `token_revoked`, an unknown one
 * `invalid_auth`); only rate limiting is a real 429 (with Retry-After), and an outage a 5xx.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

interface Channel {
  id: string;
  name: string;
  is_member: boolean;
  is_archived?: boolean;
}

export class SlackFake extends VendorFake {
  team = 'Acme Support';
  readonly channels: Channel[] = [];
  readonly users: Array<{ id: string; name: string; real_name: string; email: string; tz: string }> = [];
  readonly messages: Array<{ channel: string; text: string; ts: string }> = [];
  private readonly revoked = new Set<string>();
  private n = 0;

  override revoke(key: string): void {
    super.revoke(key);
    this.revoked.add(key);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.bearer(rec);
  }

  protected errorBody(_status: number, message: string) {
    return { ok: false, error: message };
  }

  /** Slack's codes, not sentences: the adapter maps them. */
  protected override fail(rec: HttpRecord, res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}): void {
    if (status === 429) return this.sendJson(rec, res, 429, { ok: false, error: 'ratelimited' }, headers);
    if (status >= 500) return this.sendJson(rec, res, status, { ok: false, error: 'fatal_error' }, headers);
    if (status === 401) return this.sendJson(rec, res, 200, { ok: false, error: this.revoked.has(this.credentialOf(rec) ?? '') ? 'token_revoked' : this.credentialOf(rec) ? 'invalid_auth' : 'not_authed' });
    this.sendJson(rec, res, 200, { ok: false, error: message }, headers);
  }

  private channel(ref: string): Channel | undefined {
    const name = ref.replace(/^#/, '');
    return this.channels.find((c) => c.id === ref || c.name === name);
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const at = `${rec.method} ${rec.path}`;
    if (at === 'POST /api/auth.test') return this.sendJson(rec, res, 200, { ok: true, url: 'https://acme-support.slack.com/', team: this.team, user: 'voicebot', team_id: 'T0ACME', user_id: 'U0BOT', bot_id: 'B0BOT' });
    if (at === 'POST /api/chat.postMessage') {
      if (!String(rec.headers['content-type']).startsWith('application/json')) return this.fail(rec, res, 200, 'invalid_form_data');
      const { channel, text } = rec.body ?? {};
      if (!channel) return this.fail(rec, res, 200, 'channel_not_found');
      if (!text) return this.fail(rec, res, 200, 'no_text');
      const c = this.channel(channel);
      if (!c) return this.fail(rec, res, 200, 'channel_not_found');
      if (!c.is_member) return this.fail(rec, res, 200, 'not_in_channel');
      const ts = `1700000000.${String(++this.n).padStart(6, '0')}`;
      this.messages.push({ channel: c.id, text, ts });
      return this.sendJson(rec, res, 200, { ok: true, channel: c.id, ts, message: { type: 'message', text, user: 'U0BOT', ts } });
    }
    if (at === 'GET /api/conversations.list') {
      const limit = Math.min(Number(rec.query.get('limit') ?? 100), 1000);
      const live = this.channels.filter((c) => rec.query.get('exclude_archived') !== 'true' || !c.is_archived);
      const page = live.slice(0, limit).map((c) => ({ id: c.id, name: c.name, is_channel: true, is_private: false, is_archived: Boolean(c.is_archived), is_member: c.is_member, num_members: 3 }));
      return this.sendJson(rec, res, 200, { ok: true, channels: page, response_metadata: { next_cursor: live.length > limit ? 'dGVhbTpDMDYxRkE1UEI=' : '' } });
    }
    if (at === 'GET /api/users.lookupByEmail') {
      const u = this.users.find((x) => x.email === rec.query.get('email'));
      if (!u) return this.fail(rec, res, 200, 'users_not_found');
      return this.sendJson(rec, res, 200, { ok: true, user: { id: u.id, team_id: 'T0ACME', name: u.name, real_name: u.real_name, tz: u.tz, profile: { email: u.email, real_name: u.real_name, display_name: u.name } } });
    }
    return this.fail(rec, res, 200, 'unknown_method');
  }
}
