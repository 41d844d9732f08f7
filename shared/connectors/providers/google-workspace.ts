/**
 * Google Workspace (OAuth only): Calendar v3 (freeBusy, events.insert), Gmail v1
 * (users.messages.send with a base64url RFC 2822 message), Sheets v4 (values.append,
 * spreadsheets.get) and Drive v3 (files.list for the spreadsheet picker). The APIs live on three
 * hosts: www.googleapis.com (calendar, drive, userinfo) is the main base, gmail and sheets are
 * named bases. The bearer access token comes from the executor (OAuth credential).
 */
import { invalid } from '../../errors.js';
import { accountId, type ProviderAdapter } from './types.js';

/** Slots handed back to the model: a voice agent reads a few, not a month of them. */
const MAX_SLOTS = 50;
/** Spreadsheets per picker page. */
const MAX_SPREADSHEETS = 50;
const SPREADSHEET_MIME = 'application/vnd.google-apps.spreadsheet';

function instant(field: string, v: string): number {
  const ms = Date.parse(v);
  if (!Number.isFinite(ms)) throw invalid(field, 'must be an ISO 8601 date-time');
  return ms;
}

/** Free windows of `durationMs` between start and end around the busy intervals, in order. */
export function freeSlots(startMs: number, endMs: number, durationMs: number, busy: Array<{ start: string; end: string }>): { slots: Array<{ start: string; end: string }>; truncated: boolean } {
  const intervals = busy.map((b) => [Date.parse(b.start), Date.parse(b.end)] as const).filter(([s, e]) => Number.isFinite(s) && Number.isFinite(e) && e > s).sort((a, b) => a[0] - b[0]);
  const slots: Array<{ start: string; end: string }> = [];
  let t = startMs;
  let i = 0;
  while (t + durationMs <= endMs) {
    // Skip busy intervals that ended before t; if one overlaps [t, t+d), jump to its end.
    while (i < intervals.length && intervals[i]![1] <= t) i++;
    const next = intervals[i];
    if (next && next[0] < t + durationMs) {
      t = next[1];
      continue;
    }
    if (slots.length === MAX_SLOTS) return { slots, truncated: true };
    slots.push({ start: new Date(t).toISOString(), end: new Date(t + durationMs).toISOString() });
    t += durationMs;
  }
  return { slots, truncated: false };
}

/** A header value without line breaks (no header injection), RFC 2047 encoded when not ASCII. */
function headerValue(v: string): string {
  const flat = v.replace(/[\r\n]+/g, ' ').trim();
  return /^[\x20-\x7e]*$/.test(flat) ? flat : `=?UTF-8?B?${Buffer.from(flat, 'utf8').toString('base64')}?=`;
}

/** The RFC 2822 message Gmail's `raw` field takes, base64url encoded. */
export function rfc2822(to: string, subject: string, body: string): string {
  const lines = [
    `To: ${headerValue(to)}`,
    `Subject: ${headerValue(subject)}`,
    'MIME-Version: 1.0',
    'Content-Type: text/plain; charset=UTF-8',
    'Content-Transfer-Encoding: base64',
    '',
    Buffer.from(body, 'utf8').toString('base64').replace(/.{76}/g, '$&\r\n'),
  ];
  return Buffer.from(lines.join('\r\n'), 'utf8').toString('base64url');
}

/** A1 range of a sheet by title (quotes doubled), or the first sheet. */
function sheetRange(title: string | undefined): string {
  return title ? `'${title.replace(/'/g, "''")}'!A1` : 'A1';
}

export const googleWorkspace: ProviderAdapter = {
  id: 'google_workspace',
  defaultBaseUrl: 'https://www.googleapis.com',
  extraBaseUrls: { gmail: 'https://gmail.googleapis.com', sheets: 'https://sheets.googleapis.com' },
  headers: (cred) => ({ authorization: `Bearer ${cred.access_token}` }),
  async verify({ http }) {
    // The OAuth callback verifies through the descriptor (oauth/descriptors.ts); this is the same question.
    const me = await http.request<{ email?: string; sub?: string }>('/oauth2/v3/userinfo');
    return { accountLabel: me.email ?? `Google account ${accountId(me.sub, 'sub')}` };
  },
  actions: {
    async list_free_slots({ http }, b) {
      const startMs = instant('start', b.start);
      const endMs = instant('end', b.end);
      if (endMs <= startMs) throw invalid('end', 'must be after start');
      const res = await http.request<{ calendars: Record<string, { busy?: Array<{ start: string; end: string }>; errors?: Array<{ reason: string }> }> }>('/calendar/v3/freeBusy', {
        method: 'POST',
        json: { timeMin: new Date(startMs).toISOString(), timeMax: new Date(endMs).toISOString(), items: [{ id: 'primary' }] },
      });
      const primary = res.calendars?.primary;
      if (primary?.errors?.length) throw invalid('calendar', `Google could not read the primary calendar: ${primary.errors[0]!.reason}`);
      return freeSlots(startMs, endMs, (b.duration_minutes ?? 30) * 60_000, primary?.busy ?? []);
    },
    async create_event({ http }, b) {
      instant('start', b.start);
      instant('end', b.end);
      const ev = await http.request<any>('/calendar/v3/calendars/primary/events', {
        method: 'POST',
        query: { sendUpdates: b.attendee_email ? 'all' : 'none' },
        json: { summary: b.summary, start: { dateTime: b.start }, end: { dateTime: b.end }, attendees: b.attendee_email ? [{ email: b.attendee_email }] : undefined },
      });
      return { id: ev.id, status: ev.status, html_link: ev.htmlLink ?? null, start: ev.start?.dateTime ?? b.start, end: ev.end?.dateTime ?? b.end };
    },
    async send_email({ http }, b) {
      const sent = await http.request<{ id: string; threadId: string }>('/gmail/v1/users/me/messages/send', { base: 'gmail', method: 'POST', json: { raw: rfc2822(b.to, b.subject, b.body) } });
      return { id: sent.id, thread_id: sent.threadId };
    },
    async append_row({ http }, b) {
      const range = encodeURIComponent(sheetRange(b.sheet));
      const res = await http.request<any>(`/v4/spreadsheets/${encodeURIComponent(b.spreadsheet_id)}/values/${range}:append`, {
        base: 'sheets',
        method: 'POST',
        query: { valueInputOption: 'USER_ENTERED', insertDataOption: 'INSERT_ROWS' },
        json: { majorDimension: 'ROWS', values: [b.values] },
      });
      return { spreadsheet_id: res.spreadsheetId ?? b.spreadsheet_id, updated_range: res.updates?.updatedRange ?? null, updated_rows: res.updates?.updatedRows ?? 0 };
    },
  },
  resources: {
    async spreadsheets({ http }, query) {
      const name = (query.q ?? '').trim().slice(0, 200);
      // Drive query strings quote with ' and escape it with a backslash.
      const filter = [`mimeType='${SPREADSHEET_MIME}'`, 'trashed=false', ...(name ? [`name contains '${name.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`] : [])].join(' and ');
      const res = await http.request<{ files?: Array<{ id: string; name: string; modifiedTime?: string; webViewLink?: string }> }>('/drive/v3/files', {
        query: { q: filter, pageSize: MAX_SPREADSHEETS, orderBy: 'modifiedTime desc', fields: 'files(id,name,modifiedTime,webViewLink)' },
      });
      return (res.files ?? []).slice(0, MAX_SPREADSHEETS).map((f) => ({
        id: f.id,
        name: f.name,
        modified_at: f.modifiedTime ?? null,
        url: f.webViewLink ?? `https://docs.google.com/spreadsheets/d/${encodeURIComponent(f.id)}/edit`,
      }));
    },
    async sheets({ http }, query) {
      const id = (query.spreadsheet_id ?? '').trim();
      if (!id) throw invalid('spreadsheet_id', 'is required');
      if (id.length > 200) throw invalid('spreadsheet_id', 'must be at most 200 characters');
      const res = await http.request<{ sheets?: Array<{ properties: { sheetId: number; title: string; index: number } }> }>(`/v4/spreadsheets/${encodeURIComponent(id)}`, {
        base: 'sheets',
        query: { fields: 'sheets.properties(sheetId,title,index)' },
      });
      return (res.sheets ?? []).map((s) => ({ id: s.properties.sheetId, title: s.properties.title, index: s.properties.index }));
    },
  },
};
