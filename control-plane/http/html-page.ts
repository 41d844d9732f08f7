/**
 * The few HTML pages the API serves itself (the OAuth finish page, the portal's password reset):
 * self-contained, nothing loaded, every shown value escaped and bounded.
 */
import type { ServerResponse } from 'node:http';

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' };

/** Text (or an attribute value) for the page: escaped, at most `maxChars` of it. */
export function htmlText(value: string | null | undefined, maxChars = 300): string {
  return (value ?? '').slice(0, maxChars).replace(/[&<>"']/g, (c) => ESCAPES[c]!);
}

/**
 * Writes a page. `body` is trusted markup built with htmlText. The CSP loads nothing; a page with
 * a form allows posting it to this origin only (`formAction: true`).
 */
export function sendHtmlPage(res: ServerResponse, o: { status?: number; title: string; body: string; head?: boolean; formAction?: boolean }): void {
  const html = `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width"><title>${o.title}</title></head><body><h1>${o.title}</h1>${o.body}</body></html>`;
  res.writeHead(o.status ?? 200, {
    'content-type': 'text/html; charset=utf-8',
    'content-security-policy': `default-src 'none'; frame-ancestors 'none'; base-uri 'none'; form-action ${o.formAction ? "'self'" : "'none'"}`,
    'x-content-type-options': 'nosniff',
    'cache-control': 'no-store',
    'referrer-policy': 'no-referrer',
  });
  res.end(o.head ? undefined : html);
}
