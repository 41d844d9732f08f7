/**
 * Google APIs fake for the Google Workspace connector: Calendar v3 (freeBusy, events.insert),
 * Gmail v1 (users.messages.send, decoding the base64url RFC 2822 `raw`), Sheets v4
 * (values.append, spreadsheets.get with `fields`), Drive v3 (files.list with its `q` language,
 * the subset the adapter sends) and userinfo. One server for every Google host (the adapter's
 * base URL override collapses them). Bearer tokens are the ones the linked OAuthProviderFake
 * issued; a token without the scope an API needs gets Google's 403 ACCESS_TOKEN_SCOPE_INSUFFICIENT.
 * Error bodies as Google sends them (`{error: {code, message, status}}`).
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import type { OAuthProviderFake } from './oauth-provider.js';
import { VendorFake } from './vendor-base.js';

const G = 'https://www.googleapis.com/auth/';
const SPREADSHEET_MIME = 'application/vnd.google-apps.spreadsheet';

export interface FakeSpreadsheet {
  id: string;
  name: string;
  modifiedTime: string;
  sheets: Array<{ sheetId: number; title: string; index: number; rows: unknown[][] }>;
}

export class GoogleApisFake extends VendorFake {
  /** Busy intervals of the primary calendar. */
  readonly busy: Array<{ start: string; end: string }> = [];
  readonly events: any[] = [];
  /** Decoded RFC 2822 messages sent through Gmail. */
  readonly sentMessages: string[] = [];
  readonly spreadsheets: FakeSpreadsheet[] = [];
  private nextId = 1;

  constructor(private readonly oauth: OAuthProviderFake) {
    super();
    oauth.link(this);
  }

  protected credentialOf(rec: HttpRecord) {
    return this.bearer(rec);
  }

  protected override unauthorizedMessage() {
    return 'Request had invalid authentication credentials. Expected OAuth 2 access token, login cookie or other valid authentication credential.';
  }

  protected errorBody(status: number, message: string) {
    const statusName = { 400: 'INVALID_ARGUMENT', 401: 'UNAUTHENTICATED', 403: 'PERMISSION_DENIED', 404: 'NOT_FOUND', 429: 'RESOURCE_EXHAUSTED' }[status] ?? 'INTERNAL';
    return { error: { code: status, message, status: statusName } };
  }

  private needs(rec: HttpRecord, res: ServerResponse, anyOf: string[]): boolean {
    const scopes = this.oauth.scopesOf(this.bearer(rec) ?? '') ?? [];
    if (anyOf.some((s) => scopes.includes(s))) return true;
    this.sendJson(rec, res, 403, {
      error: { code: 403, message: 'Request had insufficient authentication scopes.', status: 'PERMISSION_DENIED', details: [{ '@type': 'type.googleapis.com/google.rpc.ErrorInfo', reason: 'ACCESS_TOKEN_SCOPE_INSUFFICIENT' }] },
    });
    return false;
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const at = `${rec.method} ${rec.path}`;
    if (at === 'GET /oauth2/v3/userinfo') {
      const who = this.oauth.accessTokens.get(this.bearer(rec)!)!.user;
      return this.sendJson(rec, res, 200, { sub: who.id, email: who.email, email_verified: true });
    }
    if (at === 'POST /calendar/v3/freeBusy') {
      if (!this.needs(rec, res, [`${G}calendar.freebusy`, `${G}calendar.readonly`, `${G}calendar`])) return;
      const { timeMin, timeMax, items } = rec.body ?? {};
      if (!timeMin || !timeMax) return this.fail(rec, res, 400, 'Missing timeMin or timeMax.');
      const inRange = this.busy.filter((b) => b.end > timeMin && b.start < timeMax);
      return this.sendJson(rec, res, 200, { kind: 'calendar#freeBusy', timeMin, timeMax, calendars: Object.fromEntries((items ?? []).map((i: { id: string }) => [i.id, { busy: inRange }])) });
    }
    if (at === 'POST /calendar/v3/calendars/primary/events') {
      if (!this.needs(rec, res, [`${G}calendar.events`, `${G}calendar`])) return;
      const b = rec.body ?? {};
      if (!b.start?.dateTime || !b.end?.dateTime) return this.fail(rec, res, 400, 'Missing start or end time.');
      const ev = { kind: 'calendar#event', id: `evt${this.nextId++}`, status: 'confirmed', htmlLink: 'https://www.google.com/calendar/event?eid=x', summary: b.summary, start: b.start, end: b.end, attendees: b.attendees, sendUpdates: rec.query.get('sendUpdates') };
      this.events.push(ev);
      return this.sendJson(rec, res, 200, ev);
    }
    if (at === 'POST /gmail/v1/users/me/messages/send') {
      if (!this.needs(rec, res, [`${G}gmail.send`, 'https://mail.google.com/'])) return;
      const raw = rec.body?.raw;
      if (typeof raw !== 'string' || !/^[A-Za-z0-9_-]+$/.test(raw)) return this.fail(rec, res, 400, "Invalid value for ByteString: 'raw'");
      this.sentMessages.push(Buffer.from(raw, 'base64url').toString('utf8'));
      return this.sendJson(rec, res, 200, { id: `msg${this.nextId++}`, threadId: `thr${this.nextId}`, labelIds: ['SENT'] });
    }
    if (at === 'GET /drive/v3/files') {
      if (!this.needs(rec, res, [`${G}drive.metadata.readonly`, `${G}drive.readonly`, `${G}drive`])) return;
      const q = rec.query.get('q') ?? '';
      if (!q.includes(`mimeType='${SPREADSHEET_MIME}'`)) return this.fail(rec, res, 400, 'the fake only lists spreadsheets');
      const name = /name contains '((?:[^'\\]|\\.)*)'/.exec(q)?.[1]?.replace(/\\(.)/g, '$1');
      const files = this.spreadsheets
        .filter((s) => name === undefined || s.name.toLowerCase().includes(name.toLowerCase()))
        .sort((a, b) => b.modifiedTime.localeCompare(a.modifiedTime))
        .slice(0, Number(rec.query.get('pageSize') ?? 100))
        .map((s) => ({ id: s.id, name: s.name, modifiedTime: s.modifiedTime, webViewLink: `https://docs.google.com/spreadsheets/d/${s.id}/edit` }));
      return this.sendJson(rec, res, 200, { files });
    }
    const sheet = /^\/v4\/spreadsheets\/([^/:]+)(?:\/values\/([^/]+):append)?$/.exec(rec.path);
    if (sheet) {
      const ss = this.spreadsheets.find((s) => s.id === decodeURIComponent(sheet[1]!));
      if (rec.method === 'GET' && !sheet[2]) {
        if (!this.needs(rec, res, [`${G}spreadsheets`, `${G}spreadsheets.readonly`])) return;
        if (!ss) return this.fail(rec, res, 404, 'Requested entity was not found.');
        return this.sendJson(rec, res, 200, { sheets: ss.sheets.map((s) => ({ properties: { sheetId: s.sheetId, title: s.title, index: s.index } })) });
      }
      if (rec.method === 'POST' && sheet[2]) {
        if (!this.needs(rec, res, [`${G}spreadsheets`])) return;
        if (!ss) return this.fail(rec, res, 404, 'Requested entity was not found.');
        if (!rec.query.get('valueInputOption')) return this.fail(rec, res, 400, "'valueInputOption' is required but not specified");
        const range = decodeURIComponent(sheet[2]);
        const title = /^'((?:[^']|'')*)'!/.exec(range)?.[1]?.replace(/''/g, "'");
        const target = title === undefined ? ss.sheets[0] : ss.sheets.find((s) => s.title === title);
        if (!target) return this.fail(rec, res, 400, `Unable to parse range: ${range}`);
        const rows: unknown[][] = rec.body?.values ?? [];
        target.rows.push(...rows);
        const r = target.rows.length;
        return this.sendJson(rec, res, 200, { spreadsheetId: ss.id, tableRange: `'${target.title}'!A1:C${r - rows.length}`, updates: { spreadsheetId: ss.id, updatedRange: `'${target.title}'!A${r}:C${r}`, updatedRows: rows.length, updatedColumns: rows[0]?.length ?? 0 } });
      }
    }
    return this.fail(rec, res, 404, `Method not found: ${at}`);
  }
}
