/**
 * REST edge: one table maps each spec route onto a proto method of a service implementation.
 * REST calls the implementation directly (not through the Connect codec: ~8x cheaper) with the
 * same HandlerContext shape, so a route's logic exists once for REST, Connect and gRPC.
 *
 * Kept thin (issue 13): the route is found in a segment tree (route-table.ts), the context is a
 * plain object whose signal is the connection's (HTTP/1.1 cannot cancel one request without
 * closing its connection: one AbortController per connection, not per request), and a frozen
 * response object (a cached view, e.g. agents/view-cache.ts) is serialized once per route.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Http2ServerRequest, Http2ServerResponse } from 'node:http2';
import { isUtf8 } from 'node:buffer';
import { type DescMessage, type DescMethod, type DescService, fromJson, type JsonValue, ScalarType } from '@bufbuild/protobuf';
import { createContextValues, type HandlerContext } from '@connectrpc/connect';
import type { Logger } from '../../shared/logger.js';
import { AppError, invalid, toAppError } from '../../shared/errors.js';
import { errorBody, type Family, familyForPath, successBody, successJson } from './envelope.js';
import { RouteTable } from './route-table.js';
import { kRemoteIp, kRequestId } from './context.js';
import { assertStorableText, MAX_INPUT_DEPTH } from './input.js';
import { checkBodyShape } from './body-shape.js';
import { requestUrl, setRouteTemplate } from './request-url.js';
import { NodeRequestHeaders } from './request-headers.js';
import { writeJson } from './json-writer.js';
import { endThisTurn } from './end-batch.js';
import { ruleFor } from './scopes.js';
import type { Authenticate } from './rpc.js';

type AnyImpl = Record<string, (req: unknown, ctx: HandlerContext) => unknown>;

export interface RestRequestParts {
  params: Record<string, string>;
  query: Record<string, string | string[]>;
  body: unknown;
  headers: Headers;
}

export interface RestRoute {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE';
  /** Path under the server root, params as `:name`, e.g. `/api/v1/agents/:id`. */
  path: string;
  service: DescService;
  /** Local name of the proto method (`getAgent`). */
  rpc: string;
  /** Response family; default from the path prefix. */
  family?: Family;
  /** HTTP status on success. Default 200. */
  status?: number;
  /** Builds the request JSON. Default: query, then body, then path params (params win). */
  request?: (parts: RestRequestParts) => unknown;
  /** Maps the response JSON to `{data, meta?}`. Default: the whole response is `data`. */
  response?: (json: Record<string, unknown>) => { data: unknown; meta?: unknown };
  /** Body is not JSON (e.g. carrier form posts): `form` parses urlencoded; `text` keeps it as received (signed bodies). */
  bodyType?: 'json' | 'form' | 'none' | 'text';
  /**
   * The body must say `content-type: application/json`: a route that needs no credential and does
   * work for anyone (the logins) is then out of reach of a page on another site, whose browser
   * sends text/plain or form posts cross-origin without asking (CORS preflight) first.
   */
  jsonContentTypeOnly?: boolean;
  /**
   * Response is raw text with this content type (TwiML): the response message's `body` field is
   * sent, with the message's `content_type` field instead when it has a non-empty one.
   */
  contentType?: string;
}

interface CompiledRoute extends RestRoute {
  desc: DescMethod;
  /** Its method is not `public` in the scope table (http/scopes.ts): a bearer is resolved before anything else. */
  needsCredential: boolean;
  /** Serialized `data` / `meta` of frozen (cached, shared) response objects. */
  memo: WeakMap<object, { data?: string; meta?: string }>;
}

export interface RestRouterOptions {
  routes: RestRoute[];
  impls: Map<string, AnyImpl>;
  logger: Logger;
  maxBodyBytes: number;
  /**
   * Resolves the call's bearer (and checks an API key's scope); throws UNAUTHORIZED / FORBIDDEN.
   * Run before the body is read on every route whose method is not `public`. Absent: handlers alone check.
   */
  authenticate?: Authenticate;
}

export type NodeReq = IncomingMessage | Http2ServerRequest;
export type NodeRes = ServerResponse | Http2ServerResponse;


export function createRestRouter(opts: RestRouterOptions) {
  const compiled: CompiledRoute[] = opts.routes.map((r) => {
    const desc = r.service.methods.find((m) => m.localName === r.rpc);
    if (!desc) throw new Error(`route ${r.method} ${r.path}: ${r.service.typeName} has no method ${r.rpc}`);
    if (!opts.impls.has(r.service.typeName)) throw new Error(`route ${r.method} ${r.path}: no implementation of ${r.service.typeName}`);
    return { ...r, desc, needsCredential: ruleFor(r.service.typeName, desc.name) !== 'public', memo: new WeakMap() };
  });
  const table = new RouteTable(compiled);

  return async function handle(req: NodeReq, res: NodeRes, requestId: string, remoteIp: string): Promise<void> {
    const url = requestUrl(req);
    const family = familyForPath(url.pathname);
    let route: CompiledRoute | undefined;
    // Aborted only when the client goes away before the answer. Database work already started
    // runs to completion and its result is dropped (never cancelled on the server: agents/db.ts).
    const signal = clientSignal(req, res);
    try {
      const found = table.match(req.method ?? 'GET', url.pathname);
      route = found.route;
      if (route) setRouteTemplate(res, route.path);
      if (!route) {
        throw found.pathKnown
          ? new AppError('METHOD_NOT_ALLOWED', `method ${req.method} not allowed on ${url.pathname}`)
          : new AppError('NOT_FOUND', `no route ${req.method} ${url.pathname}`);
      }
      const headers = new NodeRequestHeaders(req.headers);
      // A plain object, not createHandlerContext: that links a deadline and the shutdown signal
      // per request, and its listeners stay until something aborts (growing with every request).
      // Shutdown destroys the sockets, which aborts `signal`.
      // Response headers and trailers are made only when a handler touches them (most never do).
      let responseHeader: Headers | undefined;
      let responseTrailer: Headers | undefined;
      const ctx: HandlerContext = {
        service: route.service,
        method: route.desc,
        protocolName: 'rest',
        requestMethod: req.method ?? 'GET',
        url: url.href,
        requestHeader: headers,
        get responseHeader() {
          return (responseHeader ??= new Headers());
        },
        get responseTrailer() {
          return (responseTrailer ??= new Headers());
        },
        signal,
        timeoutMs: noTimeout,
        values: createContextValues().set(kRequestId, requestId).set(kRemoteIp, remoteIp),
      };
      // The credential (and an API key's scope) first: a caller without one learns nothing about
      // the route's fields, and its body is never read. The handler reuses the resolved principal.
      if (route.needsCredential && opts.authenticate) {
        try {
          await opts.authenticate(ctx);
        } catch (err) {
          req.resume();
          throw err;
        }
      }
      // No body to read (GET, HEAD, bodyless routes): no promise and no microtask for it.
      const bodyType = route.bodyType ?? 'json';
      if (route.jsonContentTypeOnly && !isJsonContentType(req.headers['content-type'])) {
        req.resume();
        throw new AppError('INVALID_BODY', 'this route takes content-type: application/json only');
      }
      const body = bodyType === 'none' || req.method === 'GET' || req.method === 'HEAD' ? undefined : await readBody(req, bodyType, opts.maxBodyBytes);
      const query = url.search === '' ? NO_QUERY : queryObject(url.searchParams);
      const parts: RestRequestParts = { params: found.params, query, body, headers };
      const requestJson = route.request ? route.request(parts) : defaultRequest(route.desc.input, parts);
      const input = decodeInput(route.desc.input, requestJson);
      assertStorableText(route.desc.input, input);
      const impl = opts.impls.get(route.service.typeName)!;
      const output = await impl[route.rpc](input, ctx);
      if (route.contentType) {
        const json = writeJson(route.desc.output, output as object) as Record<string, unknown>;
        send(res, route.status ?? 200, String(json.body ?? ''), String(json.content_type ?? '') || route.contentType, responseHeader);
        return;
      }
      const fam = route.family ?? family;
      const shaped = serialized(route, output as object);
      const text = shaped.data === undefined ? JSON.stringify(successBody(fam, undefined, shaped.meta && JSON.parse(shaped.meta))) : successJson(fam, shaped.data, shaped.meta);
      send(res, route.status ?? 200, text, 'application/json', responseHeader);
    } catch (err) {
      // The client left: nobody reads an answer, and its absence is not a server error. (An HTTP/2
      // stream's body can end early before its response closes, so the signal may not say so yet.)
      if (signal.aborted || err instanceof ClientGone) return;
      const appErr = toAppError(err);
      if (appErr.code === 'INTERNAL' && appErr.options.configured) opts.logger.warn({ requestId, reason: appErr.message }, 'request refused by the deployment configuration');
      else if (appErr.code === 'INTERNAL') opts.logger.error({ err, requestId }, 'request failed');
      const h = new Headers();
      if (appErr.options.retryAfterS !== undefined) h.set('retry-after', String(appErr.options.retryAfterS));
      send(res, appErr.status, JSON.stringify(errorBody(route?.family ?? family, appErr)), 'application/json', h);
    }
  };
}

const noTimeout = (): undefined => undefined;
const NO_QUERY: Record<string, string | string[]> = Object.freeze({}) as Record<string, string | string[]>;

/** `data` and `meta` as JSON text; once per frozen (shared, immutable) response object and route. */
function serialized(route: CompiledRoute, output: object): { data?: string; meta?: string } {
  const frozen = Object.isFrozen(output);
  if (frozen) {
    const hit = route.memo.get(output);
    if (hit) return hit;
  }
  const json = writeJson(route.desc.output, output) as Record<string, unknown>;
  const shaped = route.response ? route.response(json) : { data: json };
  const out = { data: shaped.data === undefined ? undefined : JSON.stringify(shaped.data), meta: shaped.meta === undefined ? undefined : JSON.stringify(shaped.meta) };
  if (frozen) route.memo.set(output, out);
  return out;
}

/** The request body ended early: the client closed the connection or reset the stream. */
class ClientGone extends Error {
  constructor() {
    super('request body ended early: the client closed the connection');
  }
}

/** Per HTTP/1.1 connection: aborted when it closes. */
const connectionSignals = new WeakMap<object, AbortController>();

/**
 * The signal of "the client went away". HTTP/1.1 can only cancel by closing the connection, so
 * one controller per connection serves all its requests; an HTTP/2 stream can be reset alone.
 */
function clientSignal(req: NodeReq, res: NodeRes): AbortSignal {
  if (req.httpVersionMajor < 2) {
    const sock = req.socket;
    let ac = connectionSignals.get(sock);
    if (!ac) {
      const c = (ac = new AbortController());
      connectionSignals.set(sock, c);
      sock.once('close', () => c.abort());
    }
    return ac.signal;
  }
  const ac = new AbortController();
  // 'close' also fires after every normal response, and an abort costs a DOMException.
  res.once('close', () => {
    if (!res.writableFinished) ac.abort();
  });
  return ac.signal;
}

/** `application/json` or a `+json` type, parameters (charset) allowed. */
function isJsonContentType(v: string | undefined): boolean {
  const type = (v ?? '').split(';')[0]!.trim().toLowerCase();
  return type === 'application/json' || (type.startsWith('application/') && type.endsWith('+json'));
}

/** A route's JSON body as an object: none is `{}`; `null`, an array or a scalar is 400 INVALID_BODY. */
export function jsonObjectBody(body: unknown): Record<string, unknown> {
  if (body === undefined) return {};
  if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new AppError('INVALID_BODY', 'request body must be a JSON object');
  return body as Record<string, unknown>;
}

/**
 * The request JSON of a route without its own builder: query, then body, then path params (params
 * win). The body's JSON types are checked first (http/body-shape.ts: 400 naming the field path).
 */
export function defaultRequest(input: DescMessage, parts: RestRequestParts): unknown {
  if (parts.body !== undefined && (typeof parts.body !== 'object' || Array.isArray(parts.body) || parts.body === null)) {
    throw new AppError('INVALID_BODY', 'request body must be a JSON object');
  }
  const body = (parts.body ?? {}) as Record<string, unknown>;
  checkBodyShape(input, body);
  const query = coerceQuery(input, parts.query);
  refuseConflicts(input, query, body);
  return { ...query, ...body, ...coerceQuery(input, parts.params) };
}

/**
 * A field in the query and in the body with different values (`?workspace_id=A` and a read-back
 * body naming B): which was meant is a guess, and the body winning silently changed another
 * workspace's settings. 400 naming the field; the same value twice is fine.
 */
function refuseConflicts(input: DescMessage, query: Record<string, unknown>, body: Record<string, unknown>): void {
  for (const [name, fromQuery] of Object.entries(query)) {
    const field = input.fields.find((f) => f.name === name);
    const inBody = body[name] ?? (field ? body[field.jsonName] : undefined);
    if (inBody === undefined || inBody === null) continue;
    if (JSON.stringify(inBody) !== JSON.stringify(fromQuery) && String(inBody) !== String(fromQuery)) {
      throw invalid(name, 'is given in the query and in the body with different values');
    }
  }
}

/** Query strings are text; turn them into the JSON type of the target field so decoding works. */
export function coerceQuery(input: DescMessage, q: Record<string, string | string[]>): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(q)) {
    const field = input.fields.find((f) => f.name === k || f.jsonName === k);
    if (!field) continue;
    // Two values for one value (also under its two spellings, agent_id and agentId): which one
    // was meant is a guess (a filter, a limit).
    if ((Array.isArray(v) || field.name in out) && field.fieldKind !== 'list') throw invalid(k, 'is given more than once');
    const one = Array.isArray(v) ? v[v.length - 1] : v;
    if (field.fieldKind === 'list') {
      out[field.name] = Array.isArray(v) ? v : v.split(',').filter(Boolean);
    } else if (field.fieldKind === 'scalar' && field.scalar === ScalarType.BOOL) {
      if (!/^(true|false|1|0)$/.test(one)) throw invalid(k, 'must be true or false');
      out[field.name] = one === 'true' || one === '1';
    } else if (field.fieldKind === 'scalar' && field.scalar !== ScalarType.STRING && field.scalar !== ScalarType.BYTES) {
      if (!/^-?\d+(\.\d+)?$/.test(one)) throw invalid(k, 'must be a number');
      out[field.name] = Number(one);
    } else {
      out[field.name] = one;
    }
  }
  return out;
}

/** JSON -> proto message; type errors become 400 naming the field. */
export function decodeInput(input: DescMessage, json: unknown): unknown {
  try {
    return fromJson(input, stripNulls(json) as JsonValue, { ignoreUnknownFields: true });
  } catch (e) {
    const msg = (e as Error).message;
    // JSON nested past the decoder's own bound (100 levels) or the stack (100,000 levels parse fine).
    if (e instanceof RangeError || msg.includes('recursion depth')) throw invalid('body', `is nested more than ${MAX_INPUT_DEPTH} levels deep`);
    const m = /field ([\w.]+)\.(\w+) from JSON/.exec(msg) ?? /field (\w+)/.exec(msg);
    const field = m ? (m[2] ?? m[1]) : 'body';
    throw invalid(field, msg.endsWith('out of range') ? 'is out of range' : 'has the wrong type');
  }
}

/** Top-level nulls mean "not sent" (PATCH-style rules: nulls are ignored). */
function stripNulls(json: unknown): unknown {
  if (!json || typeof json !== 'object' || Array.isArray(json)) return json;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(json)) if (v !== null) out[k] = v;
  return out;
}

/**
 * The request body, parsed. Read with plain stream events (an async iterator per request cost
 * ~2 % of a small POST in the profile). Past `maxBytes` the request is destroyed, as a
 * declared-too-large one is drained: nothing more of it is read.
 */
export function readBody(req: NodeReq, type: 'json' | 'form' | 'text', maxBytes: number): Promise<unknown> {
  const declared = Number(req.headers['content-length'] ?? NaN);
  if (Number.isFinite(declared) && declared > maxBytes) {
    req.resume();
    return Promise.reject(new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBytes} bytes`));
  }
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const done = (err?: Error): void => {
      req.off('data', onData);
      req.off('end', onEnd);
      req.off('error', onError);
      req.off('close', onClose);
      if (err) return reject(err);
      try {
        const body = Buffer.concat(chunks, size);
        // JSON is UTF-8 (RFC 8259): decoding bad bytes as U+FFFD would store altered text.
        if (type === 'json' && !isUtf8(body)) throw new AppError('INVALID_BODY', 'request body is not valid UTF-8');
        resolve(parseBody(body.toString('utf8'), type));
      } catch (e) {
        reject(e as Error);
      }
    };
    const onData = (chunk: Buffer): void => {
      size += chunk.length;
      if (size > maxBytes) {
        done(new AppError('PAYLOAD_TOO_LARGE', `request body exceeds ${maxBytes} bytes`));
        req.destroy();
        return;
      }
      chunks.push(chunk);
    };
    const onEnd = (): void => done();
    const onError = (err: Error): void => done(err);
    // The client went away before the body ended ('close' without 'end').
    const onClose = (): void => done(new ClientGone());
    req.on('data', onData);
    req.once('end', onEnd);
    req.once('error', onError);
    req.once('close', onClose);
  });
}

function parseBody(text: string, type: 'json' | 'form' | 'text'): unknown {
  if (type === 'text') return text;
  if (text.trim() === '') return undefined;
  if (type === 'form') return Object.fromEntries(new URLSearchParams(text));
  try {
    return JSON.parse(text);
  } catch {
    throw new AppError('INVALID_BODY', 'request body is not valid JSON');
  }
}

function queryObject(sp: URLSearchParams): Record<string, string | string[]> {
  const out: Record<string, string | string[]> = {};
  for (const key of new Set(sp.keys())) {
    const all = sp.getAll(key);
    out[key] = all.length > 1 ? all : all[0];
  }
  return out;
}

function send(res: NodeRes, status: number, body: string, contentType: string, extra?: Headers): void {
  if (res.headersSent) return;
  const headers: Record<string, string> = { 'content-type': contentType.includes('charset') ? contentType : `${contentType}; charset=utf-8` };
  extra?.forEach((v, k) => (headers[k] = v));
  (res as ServerResponse).writeHead(status, headers);
  endThisTurn(res, body);
}

