/**
 * `<PUBLIC_BASE_URL>/agent-portal/reset-password?token=...`, the link the reset mail carries: a page
 * with a form for the new password that needs no script, posted back to the same path as a form.
 * The token in the form is the credential (as on `POST /api/v1/agent-portal/reset-password`), so
 * a cross-site post can do nothing its sender could not already do. The portal's per-IP bucket
 * limits both methods.
 */
import type { ServerResponse } from 'node:http';
import { toAppError } from '../../shared/errors.js';
import type { Logger } from '../../shared/logger.js';
import { htmlText, sendHtmlPage } from '../http/html-page.js';
import { rawRoute, requestUrl } from '../http/request-url.js';
import { readBody, type NodeReq } from '../http/rest.js';
import type { Credentials } from './credentials.js';
import type { TokenBuckets } from './rate-limit.js';

export const RESET_PAGE_PATH = '/agent-portal/reset-password';
/** A form of a token and two passwords (256 characters each, 4 bytes per character at most). */
const MAX_FORM_BYTES = 8 * 1024;
const TOKEN = /^[A-Za-z0-9_-]{1,100}$/;

export function resetPage(deps: { credentials: Credentials; buckets: TokenBuckets; logger: Logger }) {
  async function serve(req: NodeReq, res: ServerResponse): Promise<void> {
    const ip = req.socket?.remoteAddress ?? 'unknown';
    try {
      deps.buckets.take(ip);
    } catch {
      return sendHtmlPage(res, { status: 429, title: 'Too many requests', body: '<p>Wait a moment and open the link again.</p>' });
    }
    if (req.method === 'GET' || req.method === 'HEAD') {
      const head = req.method === 'HEAD';
      const token = requestUrl(req).searchParams.get('token') ?? '';
      if (!TOKEN.test(token)) return sendHtmlPage(res, { status: 400, title: 'Reset link incomplete', body: '<p>Open the whole link from the email, or ask your administrator for a new one.</p>', head });
      return sendHtmlPage(res, { title: 'Choose a new password', body: form(token), head, formAction: true });
    }
    if (req.method !== 'POST') {
      res.writeHead(405, { allow: 'GET, HEAD, POST', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    let fields: Record<string, string>;
    try {
      fields = ((await readBody(req, 'form', MAX_FORM_BYTES)) ?? {}) as Record<string, string>;
    } catch (err) {
      if (toAppError(err).code !== 'PAYLOAD_TOO_LARGE') throw err;
      return sendHtmlPage(res, { status: 413, title: 'Request too large', body: '<p>Open the link from the email again.</p>' });
    }
    const token = fields.token ?? '';
    const retry = form(TOKEN.test(token) ? token : '');
    const password = fields.password ?? '';
    if (password !== (fields.password_again ?? '')) {
      return sendHtmlPage(res, { status: 400, title: 'Choose a new password', body: `<p>The two passwords differ.</p>${retry}`, formAction: true });
    }
    try {
      await deps.credentials.confirmReset(token, password, ip);
    } catch (err) {
      const e = toAppError(err);
      if (e.status >= 500) throw err;
      const invalidToken = e.code === 'INVALID_TOKEN';
      const next = invalidToken ? '<p>Ask your administrator for a new reset link.</p>' : retry;
      return sendHtmlPage(res, { status: e.status, title: 'Password not changed', body: `<p>${htmlText(e.message)}</p>${next}`, formAction: !invalidToken });
    }
    sendHtmlPage(res, { title: 'Password changed', body: '<p>Your new password is set. Sign in to the portal with it.</p>' });
  }

  return rawRoute(
    (_req, url) => url.pathname.replace(/\/+$/, '') === RESET_PAGE_PATH,
    async (req, anyRes) => {
      const res = anyRes as ServerResponse;
      try {
        await serve(req, res);
      } catch (err) {
        // A fault or a client gone mid-body: a page, never an unhandled rejection of the raw handler.
        deps.logger.warn({ err }, 'password reset page failed');
        if (!res.headersSent) sendHtmlPage(res, { status: 503, title: 'Password not changed', body: '<p>Something went wrong. Open the link from the email again in a moment.</p>' });
      }
      return true;
    },
  );
}

function form(token: string): string {
  return (
    `<form method="post" action="${RESET_PAGE_PATH}">` +
    `<input type="hidden" name="token" value="${htmlText(token)}">` +
    '<p><label>New password (8 to 256 characters)<br><input type="password" name="password" autocomplete="new-password" required minlength="8" maxlength="256"></label></p>' +
    '<p><label>The same again<br><input type="password" name="password_again" autocomplete="new-password" required minlength="8" maxlength="256"></label></p>' +
    '<p><button type="submit">Set password</button></p></form>'
  );
}
