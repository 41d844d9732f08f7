/**
 * The one HTTP client for requests whose URL a tenant controls (tools, provider `base_url`, and
 * every later one: webhooks, alert channels, connector hosts). undici's own `fetch` on an undici
 * `Agent` whose connector resolves names through the policy (lookup.ts), so every new connection
 * goes to an address that passed, with SNI/Host of the name. Keep-alive connections are reused
 * per origin; they were checked when they were opened.
 *
 * Redirects: none are followed unless the caller asks (`maxRedirects`, at most 5). Each hop is
 * checked like the first (URL rules here, address rules at connect), and a hop that changes
 * origin drops the credential headers (Authorization, Proxy-Authorization, Cookie, and whatever
 * the caller lists in `credentialHeaders`). Tools and providers follow none: their URL is
 * configured, a redirect is a misconfiguration or an attempt to bounce the credential.
 *
 * Bounds: DNS 5 s, connect 10 s, response headers 30 s, body idle 60 s (undici), the caller's
 * own timeout/signal, `readBodyCapped` for the size.
 */
import { Agent, buildConnector, fetch as undiciFetch, type Dispatcher, type RequestInit as UndiciRequestInit } from 'undici';
import { isIP } from 'node:net';
import { AppError } from '../errors.js';
import { realClock, type Clock } from '../clock.js';
import { findOutboundRefusal, notPublic } from './errors.js';
import { createPolicyLookup, type PolicyLookupFn, type Resolver } from './lookup.js';
import { createOutboundPolicy, refusalReason, unbracket, type OutboundPolicy } from './policy.js';
import { assertRequestUrl, HTTP_PROTOCOLS, WS_PROTOCOLS } from './url.js';

export interface OutboundClientOptions {
  /** Validated CIDRs that are allowed although internal (config `outboundAllowCidrs`). Default none. */
  allowCidrs?: readonly string[];
  /** Name resolution (tests inject one). Default: the system resolver (getaddrinfo). */
  resolver?: Resolver;
  clock?: Clock;
  /** DNS bound. Default 5000 ms. */
  resolveTimeoutMs?: number;
  /** TCP + TLS connect bound. Default 10 000 ms. */
  connectTimeoutMs?: number;
  /** Request sent -> response headers. Default 30 000 ms. */
  headersTimeoutMs?: number;
  /** Longest gap between body chunks. Default 60 000 ms. */
  bodyTimeoutMs?: number;
  /** Open connections per origin (HTTP/1.1: one request each); more requests queue. Default 512. */
  connectionsPerOrigin?: number;
}

export interface OutboundFetchInit {
  method?: string;
  headers?: Record<string, string>;
  /** Replayable bodies only (307/308 resend it). */
  body?: string | Uint8Array;
  signal?: AbortSignal;
  /** Redirects to follow. Default 0: a 3xx is returned as is. At most 5. */
  maxRedirects?: number;
  /** Extra header names (lower case) that carry credentials and must not cross origins on a redirect, e.g. `x-api-key`. */
  credentialHeaders?: readonly string[];
  /**
   * This request's bound from sent to response headers, instead of the client's (30 s): a caller
   * with its own longer deadline (a tool's `timeout_ms`, up to 60 s) is not cut at the default.
   */
  headersTimeoutMs?: number;
}

export interface OutboundClient {
  readonly policy: OutboundPolicy;
  /** undici fetch under the policy. A refused URL or address rejects with AppError OUTBOUND_REFUSED. */
  fetch(url: string | URL, init?: OutboundFetchInit): Promise<Response>;
  /** `dns.lookup`-compatible, for socket clients (the `ws` package's `lookup` option). */
  readonly lookup: PolicyLookupFn;
  /**
   * Call-time URL check for clients that connect themselves (WebSockets): scheme, credentials
   * in the URL and literal addresses (a literal never reaches `lookup`). Throws OUTBOUND_REFUSED.
   */
  assertUrl(url: string | URL, kind?: 'http' | 'ws'): URL;
  /** Closes the pooled connections. Idempotent. */
  close(): Promise<void>;
}

const REDIRECT_STATUSES = new Set([301, 302, 303, 307, 308]);
const MAX_REDIRECTS = 5;
const CREDENTIAL_HEADERS = ['authorization', 'proxy-authorization', 'cookie'];

export function createOutboundClient(opts: OutboundClientOptions = {}): OutboundClient {
  const policy = createOutboundPolicy(opts.allowCidrs ?? []);
  const lookup = createPolicyLookup({ policy, resolver: opts.resolver, resolveTimeoutMs: opts.resolveTimeoutMs, clock: opts.clock ?? realClock });
  // Names go through `lookup` inside net/tls.connect; a literal IP never does (Node skips the
  // lookup for IPs), so literals are checked here before the socket is made.
  const base = buildConnector({ timeout: opts.connectTimeoutMs ?? 10_000, lookup } as buildConnector.BuildOptions);
  const connect: buildConnector.connector = (o, callback) => {
    const host = unbracket(o.hostname);
    if (isIP(host) && refusalReason(policy, host) !== undefined) return callback(notPublic(host), null);
    base(o, callback);
  };
  const agent = new Agent({
    connect,
    headersTimeout: opts.headersTimeoutMs ?? 30_000,
    bodyTimeout: opts.bodyTimeoutMs ?? 60_000,
    connections: opts.connectionsPerOrigin ?? 512,
  });
  let closed = false;

  async function send(url: URL, init: OutboundFetchInit, method: string, headers: Record<string, string>, body: string | Uint8Array | undefined, dispatcher: Dispatcher): Promise<Response> {
    try {
      const res = await undiciFetch(url, { method, headers, body, signal: init.signal, redirect: 'manual', dispatcher } as UndiciRequestInit);
      return res as unknown as Response;
    } catch (err) {
      throw findOutboundRefusal(err) ?? err;
    }
  }

  return {
    policy,
    lookup,
    assertUrl: (url, kind = 'http') => assertRequestUrl(url, policy, kind === 'ws' ? WS_PROTOCOLS : HTTP_PROTOCOLS),
    async fetch(input, init = {}) {
      if (closed) throw new AppError('SERVICE_UNAVAILABLE', 'outbound client closed');
      const maxRedirects = Math.max(0, Math.min(MAX_REDIRECTS, init.maxRedirects ?? 0));
      const stripOnCrossOrigin = new Set([...CREDENTIAL_HEADERS, ...(init.credentialHeaders ?? []).map((h) => h.toLowerCase())]);
      let url = assertRequestUrl(input, policy);
      let method = (init.method ?? 'GET').toUpperCase();
      let headers = { ...(init.headers ?? {}) };
      let body = init.body;
      const headersTimeout = init.headersTimeoutMs;
      const dispatcher = headersTimeout === undefined ? agent : agent.compose((dispatch) => (o, handler) => dispatch({ ...o, headersTimeout }, handler));
      for (let hop = 0; ; hop++) {
        const res = await send(url, init, method, headers, body, dispatcher);
        const location = res.headers.get('location');
        if (!REDIRECT_STATUSES.has(res.status) || maxRedirects === 0 || !location) return res;
        // Overflow policy: the redirect body is never read.
        await res.body?.cancel().catch(() => undefined);
        if (hop >= maxRedirects) throw new AppError('BAD_GATEWAY', `more than ${maxRedirects} redirects from "${url.hostname}"`);
        let target: URL;
        try {
          target = new URL(location, url);
        } catch {
          throw new AppError('BAD_GATEWAY', `"${url.hostname}" answered ${res.status} with a malformed Location header`);
        }
        const next = assertRequestUrl(target, policy);
        if (next.origin !== url.origin) headers = withoutHeaders(headers, stripOnCrossOrigin);
        // Fetch standard: 303 (and 301/302 after POST) continue as GET without a body.
        if (res.status === 303 || ((res.status === 301 || res.status === 302) && method === 'POST')) {
          method = 'GET';
          body = undefined;
          headers = withoutHeaders(headers, new Set(['content-type', 'content-length']));
        }
        url = next;
      }
    },
    async close() {
      if (closed) return;
      closed = true;
      await agent.close();
    },
  };
}

function withoutHeaders(headers: Record<string, string>, names: ReadonlySet<string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([k]) => !names.has(k.toLowerCase())));
}

/**
 * Reads a response body up to `maxBytes`; beyond it the body is cancelled (the connection is
 * dropped, not drained) and a BAD_GATEWAY AppError is thrown.
 */
export async function readBodyCapped(res: Response, maxBytes: number): Promise<Buffer> {
  const reader = res.body?.getReader();
  if (!reader) return Buffer.alloc(0);
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.byteLength;
    if (size > maxBytes) {
      await reader.cancel().catch(() => undefined);
      throw new AppError('BAD_GATEWAY', `response larger than ${maxBytes} bytes`);
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks);
}
