/**
 * `GET /dashboard/connectors`: where the OAuth callback sends the browser by default
 * (`CONNECTORS_DASHBOARD_URL`, docs/connectors.md) when no dashboard of the customer's takes it.
 * A small HTML page that says how the connection ended (`?connected=<provider>` or
 * `?error=<code>&reason=<text>[&provider=<id>]`) instead of a JSON 404. Every value shown is
 * escaped and bounded; the page loads nothing (a CSP of `default-src 'none'`).
 */
import type { ServerResponse } from 'node:http';
import { htmlText as shown, sendHtmlPage } from '../http/html-page.js';
import { rawRoute, requestUrl } from '../http/request-url.js';

export const FINISH_PATH = '/dashboard/connectors';
/** Provider ids and error codes are identifiers; anything else in their place is not shown. */
const IDENTIFIER = /^[a-z][a-z0-9_]{0,63}$/;

function identifier(value: string | null): string | null {
  return value && IDENTIFIER.test(value) ? value : null;
}

/** The page's title and sentence for the callback's query. */
export function finishMessage(q: URLSearchParams): { title: string; text: string } {
  const connected = identifier(q.get('connected'));
  if (connected) return { title: 'Connected', text: `${shown(connected)} is connected. You can close this window.` };
  const error = identifier(q.get('error'));
  if (error) {
    const provider = identifier(q.get('provider'));
    const what = provider ? `Connecting ${shown(provider)} failed` : 'The connection failed';
    const reason = q.get('reason');
    return { title: 'Connection failed', text: `${what} (${shown(error)})${reason ? `: ${shown(reason)}` : ''}. Start the connection again from your dashboard.` };
  }
  return { title: 'Connectors', text: 'No connection was finished here. Start a connection from your dashboard.' };
}

export const connectorFinishPage = rawRoute(
  (req, url) => (req.method === 'GET' || req.method === 'HEAD') && url.pathname.replace(/\/+$/, '') === FINISH_PATH,
  async (req, anyRes) => {
    const res = anyRes as ServerResponse;
    const { title, text } = finishMessage(requestUrl(req).searchParams);
    sendHtmlPage(res, { title, body: `<p>${text}</p>`, head: req.method === 'HEAD' });
    return true;
  },
);
