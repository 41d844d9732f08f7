/**
 * The outbound client against real sockets ("SSRF exfiltrates"). Loopback stands in for the
 * internal network: the "allowed" server listens on 127.0.0.1 and only 127.0.0.1/32 is listed,
 * so 127.0.0.2 and [::1] are refused internal hosts, each with a server that counts what reaches
 * it (the proof that nothing, credentials included, was sent).
 */
import http from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createOutboundClient, readBodyCapped, type OutboundClient, type Resolver } from '../../../shared/outbound/index.js';
import { systemError } from '../../../shared/errors.js';

interface Seen {
  url?: string;
  method?: string;
  headers: http.IncomingHttpHeaders;
}

/** A server that records every request; `/redirect?to=URL[&status=N]` answers a redirect. */
async function recordingServer(host: string): Promise<{ server: http.Server; seen: Seen[]; origin: string; port: number }> {
  const seen: Seen[] = [];
  const server = http.createServer((req, res) => {
    seen.push({ url: req.url, method: req.method, headers: req.headers });
    req.resume();
    const u = new URL(req.url ?? '/', 'http://x');
    if (u.pathname === '/redirect') {
      res.writeHead(Number(u.searchParams.get('status') ?? 302), { location: u.searchParams.get('to') ?? '/' }).end();
      return;
    }
    if (u.pathname === '/big') {
      res.writeHead(200).end(Buffer.alloc(64 * 1024, 120));
      return;
    }
    if (u.pathname === '/slow') {
      setTimeout(() => res.writeHead(200).end('late'), Number(u.searchParams.get('ms') ?? 300));
      return;
    }
    if (u.pathname === '/close') {
      res.writeHead(200, { connection: 'close' }).end('closed');
      return;
    }
    res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify({ host: req.headers.host, path: req.url }));
  });
  await new Promise<void>((r) => server.listen(0, host, r));
  const port = (server.address() as AddressInfo).port;
  return { server, seen, port, origin: host.includes(':') ? `http://[${host}]:${port}` : `http://${host}:${port}` };
}

let allowed: Awaited<ReturnType<typeof recordingServer>>;
let internal: Awaited<ReturnType<typeof recordingServer>>;
let internalV6: Awaited<ReturnType<typeof recordingServer>>;
const clients: OutboundClient[] = [];

/** Names resolve through this table (a test DNS). */
const dnsTable: Record<string, string[]> = {};
const resolver: Resolver = async (name) => {
  const addrs = dnsTable[name];
  if (!addrs) throw systemError('ENOTFOUND', `${name} not found`);
  return addrs.map((address) => ({ address, family: address.includes(':') ? 6 : 4 }));
};

function client(allowCidrs: string[] = ['127.0.0.1/32'], r: Resolver = resolver): OutboundClient {
  const c = createOutboundClient({ allowCidrs, resolver: r });
  clients.push(c);
  return c;
}

async function refusal(p: Promise<unknown>): Promise<{ code?: string; message: string }> {
  try {
    await p;
  } catch (e) {
    return e as { code?: string; message: string };
  }
  throw new Error('expected a refusal, the request went through');
}

beforeAll(async () => {
  allowed = await recordingServer('127.0.0.1');
  internal = await recordingServer('127.0.0.2');
  internalV6 = await recordingServer('::1');
});

afterAll(async () => {
  for (const c of clients) await c.close();
  for (const s of [allowed, internal, internalV6]) {
    s?.server.closeAllConnections();
    await new Promise((r) => s?.server.close(r));
  }
});

describe('SSRF exfiltrates: the outbound client', () => {
  it('reaches an address listed in OUTBOUND_ALLOW_CIDRS', async () => {
    const res = await client().fetch(`${allowed.origin}/ok`);
    expect(res.status).toBe(200);
    expect(await res.json()).toMatchObject({ path: '/ok' });
  });

  it('refuses every spelling of an internal address before any byte is sent', async () => {
    const c = client();
    const p = internal.port;
    dnsTable['localhost'] = ['127.0.0.1', '::1']; // as /etc/hosts has it: ::1 is not listed
    const urls = [
      `http://127.0.0.2:${p}/`,
      `http://2130706434:${p}/`, // decimal
      `http://0x7f000002:${p}/`, // hex
      `http://0177.0.0.2:${p}/`, // octal
      `http://127.2:${p}/`, // short
      `http://[::ffff:127.0.0.2]:${p}/`, // IPv4-mapped
      `http://[::ffff:7f00:2]:${p}/`,
      `http://localhost:${internalV6.port}/`,
      `http://[::1]:${internalV6.port}/`,
      `http://0.0.0.0:${p}/`,
    ];
    for (const url of urls) {
      const e = await refusal(c.fetch(url, { headers: { authorization: 'Bearer top-secret' } }));
      expect(e.code, url).toBe('OUTBOUND_REFUSED');
    }
    expect(internal.seen).toHaveLength(0);
    expect(internalV6.seen).toHaveLength(0);
  });

  it('refuses a DNS name that resolves to an internal address, at connect time', async () => {
    dnsTable['internal.test'] = ['127.0.0.2'];
    dnsTable['mixed.test'] = ['93.184.215.14', '127.0.0.2'];
    dnsTable['v6-internal.test'] = ['::1'];
    const c = client();
    for (const name of ['internal.test', 'mixed.test']) {
      const e = await refusal(c.fetch(`http://${name}:${internal.port}/`, { headers: { authorization: 'Bearer top-secret' } }));
      expect(e).toMatchObject({ code: 'OUTBOUND_REFUSED' });
      expect(e.message).toContain(name);
      expect(e.message).not.toContain('127.0.0.2');
    }
    expect((await refusal(c.fetch(`http://v6-internal.test:${internalV6.port}/`))).code).toBe('OUTBOUND_REFUSED');
    expect(internal.seen).toHaveLength(0);
    expect(internalV6.seen).toHaveLength(0);
  });

  it('connects a name to the checked address with the name as Host', async () => {
    dnsTable['api.allowed.test'] = ['127.0.0.1'];
    const res = await client().fetch(`http://api.allowed.test:${allowed.port}/named`);
    expect(await res.json()).toEqual({ host: `api.allowed.test:${allowed.port}`, path: '/named' });
  });

  it('re-checks the answer on every new connection (DNS rebinding)', async () => {
    // First answer allowed, later answers internal: the second connection must be refused.
    let calls = 0;
    const rebinding: Resolver = async () => [{ address: calls++ === 0 ? '127.0.0.1' : '127.0.0.2', family: 4 }];
    const c = client(['127.0.0.1/32'], rebinding);
    const first = await c.fetch(`http://rebind.test:${allowed.port}/close`);
    expect(await first.text()).toBe('closed');
    const e = await refusal(c.fetch(`http://rebind.test:${allowed.port}/close`));
    expect(e.code).toBe('OUTBOUND_REFUSED');
    expect(internal.seen).toHaveLength(0);
  });

  it('a 302 to an internal address: not followed by default, refused when following', async () => {
    const c = client();
    const before = allowed.seen.length;
    for (const to of [`http://127.0.0.2:${internal.port}/steal`, `http://[::1]:${internalV6.port}/steal`, `http://2130706434:${internal.port}/`]) {
      const url = `${allowed.origin}/redirect?to=${encodeURIComponent(to)}`;
      const res = await c.fetch(url, { headers: { authorization: 'Bearer top-secret' } });
      expect(res.status).toBe(302);
      await res.body?.cancel();
      const e = await refusal(c.fetch(url, { maxRedirects: 3, headers: { authorization: 'Bearer top-secret' } }));
      expect(e.code).toBe('OUTBOUND_REFUSED');
    }
    // A name that resolves internal, behind a redirect, is refused at connect time too.
    dnsTable['sneaky.test'] = ['127.0.0.2'];
    const e = await refusal(c.fetch(`${allowed.origin}/redirect?to=${encodeURIComponent(`http://sneaky.test:${internal.port}/`)}`, { maxRedirects: 3 }));
    expect(e.code).toBe('OUTBOUND_REFUSED');
    expect(allowed.seen.length - before).toBe(7);
    expect(internal.seen).toHaveLength(0);
    expect(internalV6.seen).toHaveLength(0);
  });

  it('credentials never follow a redirect to another origin; they do within the origin', async () => {
    // Both hosts allowed here, so the redirect is followed and we can look at what arrives.
    const c = client(['127.0.0.0/8']);
    const headers = { authorization: 'Bearer top-secret', 'x-api-key': 'k-secret', cookie: 'sid=1', 'x-trace': 'keep' };
    const before = internal.seen.length;
    const res = await c.fetch(`${allowed.origin}/redirect?to=${encodeURIComponent(`${internal.origin}/landing`)}`, { maxRedirects: 3, headers, credentialHeaders: ['x-api-key'] });
    expect(res.status).toBe(200);
    const got = internal.seen.slice(before);
    expect(got).toHaveLength(1);
    expect(got[0]!.headers.authorization).toBeUndefined();
    expect(got[0]!.headers['x-api-key']).toBeUndefined();
    expect(got[0]!.headers.cookie).toBeUndefined();
    expect(got[0]!.headers['x-trace']).toBe('keep');

    const mark = allowed.seen.length;
    await (await c.fetch(`${allowed.origin}/redirect?to=/same-origin`, { maxRedirects: 3, headers })).text();
    expect(allowed.seen.at(-1)).toMatchObject({ url: '/same-origin', headers: { authorization: 'Bearer top-secret' } });
    expect(allowed.seen.length - mark).toBe(2);
  });

  it('303 (and 302 after POST) continue as GET without the body; 307 keeps both', async () => {
    const c = client();
    const mark = allowed.seen.length;
    await (await c.fetch(`${allowed.origin}/redirect?status=303&to=/after`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' }, maxRedirects: 1 })).text();
    expect(allowed.seen.at(-1)).toMatchObject({ url: '/after', method: 'GET' });
    expect(allowed.seen.at(-1)!.headers['content-type']).toBeUndefined();
    await (await c.fetch(`${allowed.origin}/redirect?status=307&to=/again`, { method: 'POST', body: '{"a":1}', headers: { 'content-type': 'application/json' }, maxRedirects: 1 })).text();
    expect(allowed.seen.at(-1)).toMatchObject({ url: '/again', method: 'POST' });
    expect(allowed.seen.length - mark).toBe(4);
  });

  it('a malformed Location is a clear 502, not a TypeError', async () => {
    const c = client();
    const err = await c.fetch(`${allowed.origin}/redirect?to=${encodeURIComponent('http://[::1')}`, { maxRedirects: 2 }).catch((e: unknown) => e);
    expect(err).toMatchObject({ code: 'BAD_GATEWAY' });
    expect((err as Error).message).toContain('malformed Location');
  });

  it('bounds redirects and response size', async () => {
    const c = client();
    const loop = `${allowed.origin}/redirect?to=${encodeURIComponent('/redirect?to=/redirect')}`;
    expect(await refusal(c.fetch(loop, { maxRedirects: 1 }))).toMatchObject({ code: 'BAD_GATEWAY' });
    const big = await c.fetch(`${allowed.origin}/big`);
    expect(await refusal(readBodyCapped(big, 1024))).toMatchObject({ code: 'BAD_GATEWAY' });
    expect((await readBodyCapped(await c.fetch(`${allowed.origin}/big`), 128 * 1024)).length).toBe(64 * 1024);
  });

  it("a request's own headers bound replaces the client's (a tool's timeout_ms beyond the default 30 s)", async () => {
    const c = createOutboundClient({ allowCidrs: ['127.0.0.1/32'], resolver, headersTimeoutMs: 100 });
    clients.push(c);
    const slow = `${allowed.origin}/slow?ms=2500`; // undici checks its timers about once a second
    expect(String((await refusal(c.fetch(slow)) as { cause?: { code?: string } }).cause?.code)).toBe('UND_ERR_HEADERS_TIMEOUT');
    expect(await (await c.fetch(slow, { headersTimeoutMs: 5000 })).text()).toBe('late');
  });

  it('IPv6 CIDRs are exceptions too', async () => {
    const res = await client(['::1/128']).fetch(`${internalV6.origin}/v6`);
    expect(await res.json()).toMatchObject({ path: '/v6' });
    expect(internalV6.seen.at(-1)!.url).toBe('/v6');
    internalV6.seen.length = 0;
  });

  it('the socket lookup (for WebSocket clients) refuses internal answers and passes allowed ones', async () => {
    dnsTable['ws-internal.test'] = ['127.0.0.2'];
    dnsTable['ws-ok.test'] = ['127.0.0.1'];
    const c = client();
    const lookup = (name: string, all: boolean) =>
      new Promise<unknown>((resolve, reject) => c.lookup(name, { all }, (err, address, family) => (err ? reject(err) : resolve(all ? address : { address, family }))));
    await expect(lookup('ws-internal.test', true)).rejects.toMatchObject({ code: 'OUTBOUND_REFUSED' });
    await expect(lookup('2130706434', false)).rejects.toMatchObject({ code: 'OUTBOUND_REFUSED' });
    await expect(lookup('ws-ok.test', false)).resolves.toEqual({ address: '127.0.0.1', family: 4 });
    await expect(lookup('ws-ok.test', true)).resolves.toEqual([{ address: '127.0.0.1', family: 4 }]);
  });
});
