import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillTemplate, pickPath, runHttpTool } from '../../../media-engine/session/tools.js';
import type { HttpToolConfig } from '../../../shared/voice/session-config.js';

let server: http.Server;
let base = '';
const seen: Array<{ method?: string; url?: string; headers: http.IncomingHttpHeaders; body: string }> = [];
let failures = 0;

beforeAll(async () => {
  server = http.createServer((req, res) => {
    let body = '';
    req.on('data', (c) => (body += c));
    req.on('end', () => {
      seen.push({ method: req.method, url: req.url, headers: req.headers, body });
      if (req.url?.startsWith('/flaky') && failures-- > 0) {
        res.writeHead(503).end('busy');
        return;
      }
      if (req.url?.startsWith('/slow')) return; // never answers
      if (req.url?.startsWith('/text')) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
        return;
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { items: [{ name: 'first' }] }, echo: body ? JSON.parse(body) : null }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function tool(over: Partial<HttpToolConfig>): HttpToolConfig {
  return { id: 't', name: 't', description: '', parameters: {}, endpoint_url: `${base}/x`, http_method: 'POST', headers: {}, timeout_ms: 2000, retry_count: 0, ...over };
}

describe('HTTP tools', () => {
  it('fills the body template, authenticates and picks the response path', async () => {
    const r = await runHttpTool(tool({ request_body: { q: '{{city}}', fixed: 1 }, auth_type: 'api_key', auth_token: 'k1', response_path: 'data.items.0.name' }), '{"city":"Oslo"}', new AbortController().signal);
    expect(r).toMatchObject({ status: 'success', content: 'first', attempts: 1 });
    const req = seen.at(-1)!;
    expect(JSON.parse(req.body)).toEqual({ q: 'Oslo', fixed: 1 });
    expect(req.headers['x-api-key']).toBe('k1');
  });

  it('GET puts arguments in the query and URL placeholders are encoded', async () => {
    await runHttpTool(tool({ http_method: 'GET', endpoint_url: `${base}/city/{{city}}` }), '{"city":"New York","n":2}', new AbortController().signal);
    expect(seen.at(-1)!.url).toBe('/city/New%20York?n=2');
  });

  it('retries 5xx up to retry_count, then reports an error result (never throws)', async () => {
    failures = 5;
    const r = await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 2 }), '{}', new AbortController().signal);
    expect(r.status).toBe('error');
    expect(r.attempts).toBe(3);
    expect(r.error).toMatch(/HTTP 503/);
    failures = 1;
    expect((await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 1 }), '{}', new AbortController().signal)).status).toBe('success');
  });

  it('times out, and bad arguments or a dead endpoint become error results', async () => {
    expect((await runHttpTool(tool({ endpoint_url: `${base}/slow`, timeout_ms: 100 }), '{}', new AbortController().signal)).error).toMatch(/timed out/);
    expect((await runHttpTool(tool({}), 'not json', new AbortController().signal)).status).toBe('error');
    expect((await runHttpTool(tool({ endpoint_url: 'http://127.0.0.1:1/x' }), '{}', new AbortController().signal)).error).toMatch(/request failed/);
    expect((await runHttpTool(tool({ endpoint_url: `${base}/text` }), '{}', new AbortController().signal)).content).toBe('plain words');
  });
});

describe('templates', () => {
  it('fillTemplate keeps types for whole placeholders', () => {
    expect(fillTemplate({ a: '{{n}}', b: 'x-{{n}}', c: ['{{s}}'] }, { n: 3, s: 'v' })).toEqual({ a: 3, b: 'x-3', c: ['v'] });
  });
  it('pickPath walks objects and arrays', () => {
    expect(pickPath({ a: [{ b: 1 }] }, 'a.0.b')).toBe(1);
    expect(pickPath({ a: 1 }, '$.a')).toBe(1);
    expect(pickPath({ a: 1 }, 'x.y')).toBeUndefined();
  });
});
