import http from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { fillJsonText, fillTemplate, pickPath, runHttpTool, type ToolRunDeps } from '../../../media-engine/session/tools.js';
import type { HttpToolConfig } from '../../../shared/voice/session-config.js';
import { realClock, type Clock } from '../../../shared/clock.js';
import { createOutboundClient } from '../../../shared/outbound/index.js';

// The test server is on loopback, which the outbound policy refuses unless listed.
const outbound = createOutboundClient({ allowCidrs: ['127.0.0.1/32'] });
const deps: ToolRunDeps = { outbound, clock: realClock };

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
      if (req.url?.startsWith('/echo-auth')) {
        // An endpoint that echoes the credential it refused, at the end of a long body (cut at 200).
        res.writeHead(401).end(`${'x'.repeat(175)} bad token: ${String(req.headers.authorization ?? '').replace(/^Bearer /, '')}`);
        return;
      }
      if (req.url?.startsWith('/text')) {
        res.writeHead(200, { 'content-type': 'text/plain' }).end('plain words');
        return;
      }
      let echo: unknown = null;
      try {
        echo = body ? JSON.parse(body) : null;
      } catch {
        echo = body; // a form or text body
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ data: { items: [{ name: 'first' }] }, echo }));
    });
  });
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r));
  base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(async () => {
  await outbound.close();
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

function tool(over: Partial<HttpToolConfig>): HttpToolConfig {
  return { id: 't', name: 't', description: '', parameters: {}, endpoint_url: `${base}/x`, http_method: 'POST', headers: {}, timeout_ms: 2000, retry_count: 0, ...over };
}

describe('HTTP tools', () => {
  it('fills the body template, authenticates and picks the response path', async () => {
    const r = await runHttpTool(tool({ request_body: { q: '{{city}}', fixed: 1 }, auth_type: 'api_key', auth_token: 'k1', response_path: 'data.items.0.name' }), '{"city":"Oslo"}', new AbortController().signal, deps);
    expect(r).toMatchObject({ status: 'success', content: 'first', attempts: 1 });
    const req = seen.at(-1)!;
    expect(JSON.parse(req.body)).toEqual({ q: 'Oslo', fixed: 1 });
    expect(req.headers['x-api-key']).toBe('k1');
  });

  it('an error body that echoes the token of the tool carries no part of it (redacted before the 200-character cut)', async () => {
    const token = 'tok-SECRET-0123456789abcdef';
    const r = await runHttpTool(tool({ endpoint_url: `${base}/echo-auth`, auth_type: 'bearer', auth_token: token }), '{}', new AbortController().signal, deps);
    expect(r.status).toBe('error');
    // 175 + 12 characters, then the token (27) crosses the cut at 200: redacted first, then cut.
    expect(r.error).toMatch(/^HTTP 401: x{175} bad token: \[redac/);
    expect(r.content).not.toContain('tok-SECR');
  });

  it('a token without a type goes as Bearer unless the tool has its own Authorization; a typed one replaces it; header templates take the arguments', async () => {
    const call = async (over: Partial<HttpToolConfig>, args = '{}') => {
      await runHttpTool(tool(over), args, new AbortController().signal, deps);
      return seen.at(-1)!.headers;
    };
    // Untyped (`none`, the default): Bearer, but the tool's own Authorization wins (both were sent, comma-joined).
    expect((await call({ auth_type: 'none', auth_token: 'stored-token', headers: { Authorization: 'Custom mine' } })).authorization).toBe('Custom mine');
    expect((await call({ auth_token: 'stored-token' })).authorization).toBe('Bearer stored-token');
    // With bearer, ours is the one Authorization (both were sent, joined by a comma).
    expect((await call({ auth_type: 'bearer', auth_token: 'tok-1', headers: { Authorization: 'Custom mine' } })).authorization).toBe('Bearer tok-1');
    // {{name}} in a header value from the model's arguments, on one line.
    expect((await call({ headers: { 'X-Id': 'item-{{id}}' } }, '{"id":"42\\r\\nX-Evil: 1\\u0001"}'))['x-id']).toBe('item-42  X-Evil: 1');
    // Outside ASCII: percent-encoded UTF-8 (fetch refused the value and the tool never ran).
    expect((await call({ headers: { 'X-City': '{{city}}' } }, '{"city":"北京 Zürich"}'))['x-city']).toBe('%E5%8C%97%E4%BA%AC Z%C3%BCrich');
  });

  it('GET puts arguments in the query and URL placeholders are encoded', async () => {
    await runHttpTool(tool({ http_method: 'GET', endpoint_url: `${base}/city/{{city}}` }), '{"city":"New York","n":2}', new AbortController().signal, deps);
    expect(seen.at(-1)!.url).toBe('/city/New%20York?n=2');
  });

  it('a tool saved with a placeholder in its host is never called (the caller would pick where its token goes)', async () => {
    const before = seen.length;
    const r = await runHttpTool(tool({ endpoint_url: 'http://{{host}}/x', auth_type: 'bearer', auth_token: 'secret-token' }), '{"host":"127.0.0.1"}', new AbortController().signal, deps);
    expect(r).toMatchObject({ status: 'error', attempts: 1, error: expect.stringMatching(/placeholder.*host/) });
    expect(seen.length).toBe(before);
  });

  it('a string body sent as JSON escapes the values: the caller can neither break it nor add keys', async () => {
    const template = '{"q":"{{city}}","role":"user","n":{{n}},"tags":{{tags}}}';
    await runHttpTool(tool({ request_body: template }), JSON.stringify({ city: 'x","role":"admin', n: 3, tags: ['a', 'b"c'] }), new AbortController().signal, deps);
    expect(JSON.parse(seen.at(-1)!.body)).toEqual({ q: 'x","role":"admin', role: 'user', n: 3, tags: ['a', 'b"c'] });
    // Not JSON (a form body the tool declares): filled as text, as before.
    await runHttpTool(tool({ request_body: 'q={{city}}', headers: { 'Content-Type': 'application/x-www-form-urlencoded' } }), '{"city":"Oslo"}', new AbortController().signal, deps);
    expect(seen.at(-1)!).toMatchObject({ body: 'q=Oslo', headers: expect.objectContaining({ 'content-type': 'application/x-www-form-urlencoded' }) });
  });

  it('retries 5xx up to retry_count, then reports an error result (never throws)', async () => {
    failures = 5;
    const r = await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 2 }), '{}', new AbortController().signal, deps);
    expect(r.status).toBe('error');
    expect(r.attempts).toBe(3);
    expect(r.error).toMatch(/HTTP 503/);
    failures = 1;
    expect((await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 1 }), '{}', new AbortController().signal, deps)).status).toBe('success');
  });

  it('times out, and bad arguments or a dead endpoint become error results', async () => {
    expect((await runHttpTool(tool({ endpoint_url: `${base}/slow`, timeout_ms: 100 }), '{}', new AbortController().signal, deps)).error).toMatch(/timed out/);
    expect((await runHttpTool(tool({}), 'not json', new AbortController().signal, deps)).status).toBe('error');
    expect((await runHttpTool(tool({ endpoint_url: 'http://127.0.0.1:1/x' }), '{}', new AbortController().signal, deps)).error).toMatch(/request failed/);
    expect((await runHttpTool(tool({ endpoint_url: `${base}/text` }), '{}', new AbortController().signal, deps)).content).toBe('plain words');
    // A response_path cannot apply to text: the model gets the text, not null.
    expect(await runHttpTool(tool({ endpoint_url: `${base}/text`, response_path: 'data.items.0.name' }), '{}', new AbortController().signal, deps)).toMatchObject({ status: 'success', content: 'plain words', value: 'plain words' });
  });
});

describe('templates', () => {
  it('fillJsonText: escaped inside strings, JSON outside, escapes in the template kept, missing values empty or null', () => {
    expect(fillJsonText('{"a":"pre {{s}} \\"q\\" {{n}}","b":{{n}},"c":{{missing}},"d":"{{missing}}"}', { s: 'x"y\n', n: 2 })).toBe('{"a":"pre x\\"y\\n \\"q\\" 2","b":2,"c":null,"d":""}');
    expect(JSON.parse(fillJsonText('{"o":"{{obj}}","v":{{obj}}}', { obj: { k: [1] } }))).toEqual({ o: '{"k":[1]}', v: { k: [1] } });
  });
  it('fillTemplate keeps types for whole placeholders', () => {
    expect(fillTemplate({ a: '{{n}}', b: 'x-{{n}}', c: ['{{s}}'] }, { n: 3, s: 'v' })).toEqual({ a: 3, b: 'x-3', c: ['v'] });
  });
  it('pickPath walks objects and arrays', () => {
    expect(pickPath({ a: [{ b: 1 }] }, 'a.0.b')).toBe(1);
    expect(pickPath({ a: 1 }, '$.a')).toBe(1);
    expect(pickPath({ a: 1 }, 'x.y')).toBeUndefined();
  });
});

describe('tool retries back off with jitter', () => {
  /** realClock, recording every timer it is asked for. */
  function recordingClock(): Clock & { timersMs: number[] } {
    const timersMs: number[] = [];
    return { ...realClock, timersMs, setTimeout: (fn, ms) => (timersMs.push(ms), realClock.setTimeout(fn, ms)) };
  }

  it('waits an exponential, jittered, capped backoff on the caller clock between attempts', async () => {
    failures = 10;
    const clock = recordingClock();
    const before = seen.length;
    const r = await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 4, timeout_ms: 5000 }), '{}', new AbortController().signal, {
      outbound,
      clock,
      backoff: { baseMs: 40, maxMs: 100, random: () => 0.5 },
    });
    expect(r).toMatchObject({ status: 'error', attempts: 5 });
    expect(seen.length - before).toBe(5);
    // One 5000 ms request timeout per attempt, and between attempts half (random 0.5) of 40, 80, 160->100 (cap), 320->100.
    expect(clock.timersMs.filter((ms) => ms !== 5000)).toEqual([20, 40, 50, 50]);
  });

  it('full jitter: a random of 0 retries at once, and no wait is longer than the cap', async () => {
    failures = 2;
    const clock = recordingClock();
    const r = await runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 2, timeout_ms: 5000 }), '{}', new AbortController().signal, {
      outbound,
      clock,
      backoff: { baseMs: 1000, maxMs: 1000, random: () => 0 },
    });
    expect(r).toMatchObject({ status: 'success', attempts: 3 });
    expect(clock.timersMs.filter((ms) => ms !== 5000)).toEqual([0, 0]);
  });

  it('a cancelled call stops waiting at once and makes no further attempt', { timeout: 5000 }, async () => {
    failures = 10;
    const ac = new AbortController();
    const before = seen.length;
    const clock = recordingClock();
    const pending = runHttpTool(tool({ endpoint_url: `${base}/flaky`, retry_count: 5, timeout_ms: 5000 }), '{}', ac.signal, {
      outbound,
      // The call is cancelled (barge-in, hang-up) 20 ms into the 60 s wait.
      clock: { ...clock, setTimeout: (fn, ms) => (ms === 60_000 && realClock.setTimeout(() => ac.abort(), 20), clock.setTimeout(fn, ms)) },
      backoff: { baseMs: 60_000, maxMs: 60_000, random: () => 1 },
    });
    const r = await pending;
    expect(r).toMatchObject({ status: 'error', error: 'cancelled', attempts: 1 });
    expect(seen.length - before).toBe(1);
  });

  it('not retried: a refused address, or no outbound client at all (no request is made)', async () => {
    failures = 0;
    const before = seen.length;
    const strict = createOutboundClient();
    try {
      const refused = await runHttpTool(tool({ retry_count: 3 }), '{}', new AbortController().signal, { outbound: strict, clock: realClock });
      expect(refused).toMatchObject({ status: 'error', attempts: 1, refused: true });
      expect(refused.error).toMatch(/refused/);
      expect(seen.length).toBe(before);
    } finally {
      await strict.close();
    }
    const none = await runHttpTool(tool({ retry_count: 3 }), '{}', new AbortController().signal, { clock: realClock });
    expect(none).toMatchObject({ status: 'error', attempts: 1 });
    expect(none).not.toHaveProperty('refused');
    expect(seen.length).toBe(before);
  });
});
