/**
 * Jira Cloud REST API v3 (https://developer.atlassian.com/cloud/jira/platform/rest/v3/): HTTP
 * Basic with the account email and an API token, on the tenant's own `<name>.atlassian.net`
 * (the catalog pattern pins the host to that suffix). v3 takes rich text (issue description,
 * comment body) as Atlassian Document Format, not a plain string. An OAuth connection sends
 * its bearer token to `api.atlassian.com/ex/jira/{cloud_id}` instead (same REST paths).
 */
import { basic, type ProviderAdapter } from './types.js';

/** Plain text as an ADF document: one paragraph per line (empty lines kept as empty paragraphs). */
export function adf(text: string) {
  return {
    type: 'doc',
    version: 1,
    content: text.split(/\r?\n/).map((line) => (line ? { type: 'paragraph', content: [{ type: 'text', text: line }] } : { type: 'paragraph', content: [] })),
  };
}

/** ADF back to plain text (what a voice agent can read out): the text nodes, paragraphs on lines. */
export function adfText(doc: any): string | null {
  if (!doc || typeof doc !== 'object') return null;
  const walk = (n: any): string => (n?.type === 'text' ? String(n.text ?? '') : Array.isArray(n?.content) ? n.content.map(walk).join(n.type === 'doc' ? '\n' : '') : '');
  return walk(doc);
}

const FIELDS = 'summary,status,description,issuetype,priority,assignee,updated';

export const jira: ProviderAdapter = {
  id: 'jira',
  defaultBaseUrl: 'https://{site}',
  // OAuth 2.0 (3LO) tokens are not accepted on the site: the cloud id comes from accessible-resources.
  oauthBaseUrl: 'https://api.atlassian.com/ex/jira/{cloud_id}',
  headers: (cred) => ({ authorization: basic(cred.email ?? '', cred.api_token ?? '') }),
  async verify({ http, cred }) {
    const me = await http.request<{ accountId: string; displayName?: string; emailAddress?: string }>('/rest/api/3/myself');
    return { accountLabel: `${me.displayName ?? me.emailAddress ?? cred.email} @ ${cred.site}` };
  },
  actions: {
    async create_issue({ http, cred }, b) {
      const fields: Record<string, unknown> = { project: { key: b.project_key }, summary: b.summary, issuetype: { name: b.issue_type ?? 'Task' } };
      if (b.description) fields.description = adf(b.description);
      const res = await http.request<{ id: string; key: string }>('/rest/api/3/issue', { method: 'POST', json: { fields } });
      return { id: res.id, key: res.key, url: `https://${cred.site}/browse/${res.key}` };
    },
    async find_issue({ http }, b) {
      const res = await http.request<{ id: string; key: string; fields: any }>(`/rest/api/3/issue/${encodeURIComponent(b.issue_key)}`, { query: { fields: FIELDS } });
      const f = res.fields ?? {};
      return {
        id: res.id,
        key: res.key,
        summary: f.summary ?? null,
        status: f.status?.name ?? null,
        issue_type: f.issuetype?.name ?? null,
        priority: f.priority?.name ?? null,
        assignee: f.assignee?.displayName ?? null,
        description: adfText(f.description),
        updated: f.updated ?? null,
      };
    },
    async add_comment({ http }, b) {
      const res = await http.request<{ id: string; created?: string }>(`/rest/api/3/issue/${encodeURIComponent(b.issue_key)}/comment`, { method: 'POST', json: { body: adf(b.body) } });
      return { id: res.id, issue_key: b.issue_key, created: res.created ?? null };
    },
  },
};
