/**
 * Jira Cloud REST v3 fake. The tenant's site is the first path segment (tests set
 * CONNECTOR_JIRA_BASE_URL to `<fake>/{site}`), so an unknown site answers 404 like an unknown
 * `<name>.atlassian.net`. Basic `email:api_token`; rich text must be Atlassian Document Format
 * (a plain string is refused as Jira does); errors `{errorMessages: [...], errors: {field: msg}}`.
 * OAuth 2.0 (3LO) calls arrive as api.atlassian.com does them: `/ex/jira/{cloudId}/rest/...` with
 * a bearer token (tests set CONNECTOR_JIRA_OAUTH_BASE_URL to `<fake>/ex/jira/{cloud_id}`); an
 * unknown cloud id is 404, and a Basic credential there is refused like a bad token.
 */
import type { ServerResponse } from 'node:http';
import type { HttpRecord } from './http-fake.js';
import { VendorFake } from './vendor-base.js';

const isAdf = (d: any) => d && typeof d === 'object' && d.type === 'doc' && d.version === 1 && Array.isArray(d.content);

export class JiraFake extends VendorFake {
  readonly sites = new Set<string>();
  /** OAuth: cloud id -> site (`accessible-resources` ids). */
  readonly clouds = new Map<string, string>();
  readonly projects = new Set(['OPS']);
  readonly issues = new Map<string, { id: string; key: string; fields: any; comments: any[] }>();
  private nextId = 10000;

  /** Accepts `email` + `token` on `site` (`<name>.atlassian.net`). */
  allow(site: string, email: string, token: string): void {
    this.sites.add(site);
    this.validKeys.add(`${email}:${token}`);
  }

  /** OAuth: `cloudId` serves `site` to bearer tokens (the OAuth fake `link`ed to this one issues them). */
  allowCloud(cloudId: string, site: string): void {
    this.clouds.set(cloudId, site);
  }

  protected credentialOf(rec: HttpRecord) {
    return rec.path.startsWith('/ex/jira/') ? this.bearer(rec) : this.basic(rec);
  }

  protected override unauthorizedMessage() {
    return 'Client must be authenticated to access this resource.';
  }

  protected errorBody(_status: number, message: string) {
    return { errorMessages: [message], errors: {} };
  }

  protected route(rec: HttpRecord, res: ServerResponse): void {
    const oauth = /^\/ex\/jira\/([^/]+)(\/.*)$/.exec(rec.path);
    const [, site, ...rest] = oauth ? ['', this.clouds.get(oauth[1]!), ...oauth[2]!.split('/').slice(1)] : rec.path.split('/');
    if (!site || !(oauth ? [...this.clouds.values()].includes(site) : this.sites.has(site))) return this.fail(rec, res, 404, 'Site temporarily unavailable');
    const at = `${rec.method} /${rest.join('/')}`;
    const [email] = (this.credentialOf(rec) ?? '').split(':');
    if (at === 'GET /rest/api/3/myself') return this.sendJson(rec, res, 200, { accountId: '5b10ac8d82e05b22cc7d4ef5', emailAddress: email, displayName: 'Support Bot', active: true, timeZone: 'UTC' });
    if (at === 'POST /rest/api/3/issue') {
      const f = rec.body?.fields ?? {};
      if (!this.projects.has(f.project?.key)) return this.sendJson(rec, res, 400, { errorMessages: [], errors: { project: 'valid project is required' } });
      if (!['Task', 'Bug', 'Story'].includes(f.issuetype?.name)) return this.sendJson(rec, res, 400, { errorMessages: [], errors: { issuetype: 'Specify a valid issue type' } });
      if (!f.summary) return this.sendJson(rec, res, 400, { errorMessages: [], errors: { summary: 'You must specify a summary of the issue.' } });
      if (f.description !== undefined && !isAdf(f.description)) return this.sendJson(rec, res, 400, { errorMessages: [], errors: { description: 'Operation value must be an Atlassian Document (see the Atlassian Document Format)' } });
      const id = String(this.nextId++);
      const key = `${f.project.key}-${this.issues.size + 1}`;
      this.issues.set(key, { id, key, fields: { ...f, status: { name: 'To Do' }, priority: { name: 'Medium' }, assignee: null, updated: new Date().toISOString() }, comments: [] });
      return this.sendJson(rec, res, 201, { id, key, self: `https://${site}/rest/api/3/issue/${id}` });
    }
    const m = /^(GET|POST) \/rest\/api\/3\/issue\/([^/]+)(\/comment)?$/.exec(at);
    if (m) {
      const issue = this.issues.get(decodeURIComponent(m[2]!));
      if (!issue) return this.fail(rec, res, 404, 'Issue does not exist or you do not have permission to see it.');
      if (m[1] === 'GET' && !m[3]) return this.sendJson(rec, res, 200, { id: issue.id, key: issue.key, fields: issue.fields });
      if (m[1] === 'POST' && m[3]) {
        if (!isAdf(rec.body?.body)) return this.sendJson(rec, res, 400, { errorMessages: [], errors: { comment: 'Comment body can not be empty!' } });
        const c = { id: String(this.nextId++), body: rec.body.body, created: new Date().toISOString(), author: { displayName: 'Support Bot' } };
        issue.comments.push(c);
        return this.sendJson(rec, res, 201, c);
      }
    }
    return this.fail(rec, res, 404, `No route ${at}`);
  }
}
