/**
 * Slack Web API (https://api.slack.com/web): bot token as bearer. Slack answers most failures
 * with HTTP 200 and `{ok: false, error: "<code>"}`, so every call goes through `slackCall`,
 * which turns those codes into the same VendorError kinds an HTTP status would give.
 */
import { VendorError, type VendorHttp, type VendorRequest } from './http.js';
import type { ProviderAdapter } from './types.js';

/** One page of channels: a voice agent names a channel, it does not browse thousands. */
const MAX_CHANNELS = 200;

const AUTH_ERRORS = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired', 'account_inactive', 'missing_scope', 'no_permission']);
const TOKEN_ERRORS = new Set(['invalid_auth', 'not_authed', 'token_revoked', 'token_expired']);
const NOT_FOUND_ERRORS = new Set(['channel_not_found', 'users_not_found', 'user_not_found']);

function slackKind(code: string): VendorError['kind'] {
  if (AUTH_ERRORS.has(code)) return 'auth';
  if (code === 'ratelimited') return 'rate_limited';
  if (NOT_FOUND_ERRORS.has(code)) return 'not_found';
  if (code === 'fatal_error' || code === 'internal_error' || code === 'service_unavailable' || code === 'request_timeout') return 'unavailable';
  return 'rejected';
}

async function slackCall<T = any>(http: VendorHttp, method: string, req: VendorRequest = {}): Promise<T> {
  const res = await http.request<{ ok: boolean; error?: string; needed?: string }>(`/api/${method}`, req);
  if (res?.ok === true) return res as T;
  const code = typeof res?.error === 'string' ? res.error.slice(0, 100) : 'unknown_error';
  const reason = code === 'missing_scope' && res.needed ? `missing_scope (needs ${String(res.needed).slice(0, 100)})` : code;
  // An expired or revoked token is what a 401 means elsewhere: the executor refreshes on it
  // (token rotation) and runs the call once more.
  throw new VendorError(slackKind(code), reason, TOKEN_ERRORS.has(code) ? 401 : 200);
}

export const slack: ProviderAdapter = {
  id: 'slack',
  defaultBaseUrl: 'https://slack.com',
  headers: (cred) => ({ authorization: `Bearer ${cred.api_key}` }),
  async verify({ http }) {
    const me = await slackCall<{ team?: string; url?: string; user?: string }>(http, 'auth.test', { method: 'POST' });
    return { accountLabel: `Slack ${me.team ?? me.url ?? 'workspace'}${me.user ? ` (bot ${me.user})` : ''}` };
  },
  actions: {
    async send_message({ http }, b) {
      const res = await slackCall<{ channel: string; ts: string }>(http, 'chat.postMessage', { method: 'POST', json: { channel: b.channel, text: b.text } });
      return { channel: res.channel, ts: res.ts };
    },
    async list_channels({ http }) {
      const res = await slackCall<{ channels: any[]; response_metadata?: { next_cursor?: string } }>(http, 'conversations.list', {
        query: { types: 'public_channel', exclude_archived: 'true', limit: MAX_CHANNELS },
      });
      const channels = (res.channels ?? []).slice(0, MAX_CHANNELS).map((c) => ({ id: c.id, name: c.name, is_member: c.is_member ?? null, num_members: c.num_members ?? null }));
      return { channels, truncated: Boolean(res.response_metadata?.next_cursor) };
    },
    async find_user({ http }, b) {
      const { user } = await slackCall<{ user: any }>(http, 'users.lookupByEmail', { query: { email: b.email } });
      return { id: user.id, name: user.name ?? null, real_name: user.real_name ?? user.profile?.real_name ?? null, email: user.profile?.email ?? b.email, tz: user.tz ?? null };
    },
  },
};
