/**
 * HTTP tools from the agent config. A tool call never throws into the call: every failure
 * (timeout, HTTP error, bad JSON, crashed endpoint, an address the outbound policy refuses)
 * becomes an error result the model can read.
 *
 * Every request goes through the outbound client (shared/outbound): the tool's URL is tenant
 * input, so it may only reach public addresses (or OUTBOUND_ALLOW_CIDRS), and the tool's
 * credentials are never sent anywhere else. Redirects are not followed: a 3xx is an error result
 * (the tool's URL is configured, so a redirect is a misconfiguration or an attempt to bounce the
 * credential elsewhere). Retries (`retry_count`, 5xx/429/network only) wait an exponential
 * backoff with full jitter on the call's clock, so a failing endpoint is not hammered.
 */
import { redactSecrets, secretsInHeaders } from '../providers/redact.js';
import type { FlowEffect } from '../voice/flow.js';
import type { HttpToolConfig } from '../voice/session-config.js';
import type { Clock } from '../clock.js';
import { sleepBackoff, type BackoffOptions } from '../backoff.js';
import { findOutboundRefusal, readBodyCapped, type OutboundClient } from '../outbound/index.js';

export interface ToolResult {
  status: 'success' | 'error';
  /** What the model sees (a string; JSON for structured output). */
  content: string;
  /** The full output for the record. */
  output: unknown;
  /** HTTP tools: the output with `response_path` applied (what `content` is made of), for flow variables. */
  value?: unknown;
  error?: string;
  /** The outbound address policy refused the tool's URL (logged by the engine: an operator's matter). */
  refused?: true;
  latencyMs: number;
  attempts: number;
  /** Flow functions only: how the call's flow moves (`flow-state.ts`), applied by the actor if the run is still current. */
  effects?: FlowEffect[];
}

export interface ToolRunDeps {
  /** Tenant URLs go through it. Absent: every tool call is refused without a request. */
  outbound?: OutboundClient;
  /** Timeouts, retry waits and latency. */
  clock: Clock;
  /** Waits between attempts. Default: base 200 ms, cap 2000 ms, full jitter. */
  backoff?: BackoffOptions;
}

const MAX_RESPONSE_BYTES = 256 * 1024;
const DEFAULT_TIMEOUT_MS = 10_000;
const TOOL_BACKOFF: BackoffOptions = { baseMs: 200, maxMs: 2000 };

class ToolError extends Error {
  constructor(
    message: string,
    readonly retryable: boolean,
    readonly refused = false,
  ) {
    super(message);
  }
}

export async function runHttpTool(tool: HttpToolConfig, argsJson: string, signal: AbortSignal, deps: ToolRunDeps): Promise<ToolResult> {
  const now = (): number => deps.clock.monotonicMs();
  const started = now();
  let args: Record<string, unknown>;
  try {
    const parsed = argsJson.trim() ? JSON.parse(argsJson) : {};
    args = parsed && typeof parsed === 'object' && !Array.isArray(parsed) ? (parsed as Record<string, unknown>) : {};
  } catch {
    return errorResult('the model sent arguments that are not JSON', started, now, 0);
  }
  const attemptsAllowed = 1 + Math.max(0, Math.min(5, tool.retry_count));
  let lastError = 'not attempted';
  let refused = false;
  let attempts = 0;
  for (let attempt = 1; attempt <= attemptsAllowed; attempt++) {
    if (attempt > 1) {
      try {
        await sleepBackoff(deps.clock, attempt - 1, signal, () => new ToolError('cancelled', false), deps.backoff ?? TOOL_BACKOFF);
      } catch {
        return errorResult('cancelled', started, now, attempts);
      }
    }
    if (signal.aborted) return errorResult('cancelled', started, now, attempts);
    attempts = attempt;
    try {
      const output = await callOnce(tool, args, signal, deps);
      // An answer that is not JSON has no path to pick: the model gets its text (it got null).
      const picked = typeof output === 'string' ? output : pickPath(output, tool.response_path);
      return {
        status: 'success',
        content: typeof picked === 'string' ? picked : JSON.stringify(picked ?? null),
        output,
        value: picked ?? null,
        latencyMs: Math.round(now() - started),
        attempts,
      };
    } catch (e) {
      lastError = (e as Error).message;
      refused = e instanceof ToolError && e.refused;
      if (!(e instanceof ToolError) || !e.retryable) break;
    }
  }
  return errorResult(lastError, started, now, attempts, refused);
}

function errorResult(message: string, started: number, now: () => number, attempts: number, refused = false): ToolResult {
  return {
    status: 'error',
    content: JSON.stringify({ error: message }),
    output: { error: message },
    error: message,
    ...(refused ? { refused: true as const } : {}),
    latencyMs: Math.round(now() - started),
    attempts,
  };
}

async function callOnce(tool: HttpToolConfig, args: Record<string, unknown>, outer: AbortSignal, deps: ToolRunDeps): Promise<unknown> {
  if (!deps.outbound) throw new ToolError('outbound requests are not configured on this engine', false);
  const method = (tool.http_method || 'POST').toUpperCase();
  // Saved before the edge refused it: never filled (the caller would pick the token's destination).
  if (placeholderBeforePath(tool.endpoint_url)) throw new ToolError('the tool URL has a {{placeholder}} in its host: only the path and query may have them', false);
  let url: URL;
  try {
    url = new URL(fillString(tool.endpoint_url, args, true));
  } catch {
    throw new ToolError('the tool URL is not a valid URL', false);
  }
  const headers: Record<string, string> = { accept: 'application/json' };
  // `{{name}}` in header values from the model's arguments, as in the URL and body (one line: a
  // value the model wrote cannot add a header).
  for (const [name, value] of Object.entries(tool.headers ?? {})) headers[name] = headerValue(fillString(value, args, false));
  const credential = credentialHeader(tool, headers);
  if (credential) {
    // Ours replaces the same header in any letter case (both were sent, joined by a comma).
    for (const name of headerNames(headers, credential[0])) delete headers[name];
    headers[credential[0]] = credential[1];
  }
  let body: string | undefined;
  if (method === 'GET' || method === 'DELETE') {
    for (const [k, v] of Object.entries(args)) if (!url.searchParams.has(k) && !tool.endpoint_url.includes(`{{${k}}}`)) url.searchParams.set(k, String(v));
  } else {
    const contentType = headerNames(headers, 'content-type').map((name) => headers[name]!)[0];
    const template = tool.request_body;
    // A string template sent as JSON is filled as JSON text; one of another declared type as text.
    const asJson = contentType === undefined || /json/i.test(contentType);
    const payload =
      template === undefined || template === null || template === '' ? args : typeof template === 'string' && asJson ? fillJsonText(template, args) : fillTemplate(template, args);
    body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    if (contentType === undefined) headers['content-type'] = 'application/json';
  }
  const timeoutMs = Math.max(1, tool.timeout_ms || DEFAULT_TIMEOUT_MS);
  const timeout = new AbortController();
  const timer = deps.clock.setTimeout(() => timeout.abort(), timeoutMs);
  const signal = AbortSignal.any([outer, timeout.signal]);
  try {
    // The timeout covers the whole exchange: connect, headers and the (bounded) body.
    // The tool's own timeout bounds the wait for headers too (it may exceed the client's 30 s).
    const res = await deps.outbound.fetch(url, { method, headers, body, signal, maxRedirects: 0, headersTimeoutMs: timeoutMs });
    if (res.status >= 300 && res.status < 400) {
      await res.body?.cancel().catch(() => undefined);
      throw new ToolError(`HTTP ${res.status}: redirects are not followed (configure the final URL)`, false);
    }
    const text = (await readBodyCapped(res, MAX_RESPONSE_BYTES)).toString('utf8');
    // An endpoint may echo the credential it refused: redacted (before the cut) on its way to the
    // socket, the record and the model, which could read it out to the caller.
    if (!res.ok) throw new ToolError(`HTTP ${res.status}: ${redactSecrets(text, [tool.auth_token, ...secretsInHeaders(headers)]).slice(0, 200)}`, res.status >= 500 || res.status === 429);
    try {
      return text ? JSON.parse(text) : null;
    } catch {
      return text;
    }
  } catch (e) {
    if (e instanceof ToolError) throw e;
    const refused = findOutboundRefusal(e);
    if (refused) throw new ToolError(refused.message, false, true);
    if (timeout.signal.aborted) throw new ToolError(`timed out after ${timeoutMs} ms`, true);
    if (outer.aborted) throw new ToolError('cancelled', false);
    if ((e as { code?: string }).code === 'BAD_GATEWAY') throw new ToolError((e as Error).message, false);
    throw new ToolError(`request failed: ${describeNetworkError(e)}`, true);
  } finally {
    deps.clock.clearTimeout(timer);
  }
}

/** `fetch failed` says nothing: the cause's code (ECONNREFUSED, ENOTFOUND, ...) does. */
function describeNetworkError(e: unknown): string {
  const cause = (e as { cause?: { code?: string; message?: string } }).cause;
  const message = (e as Error)?.message ?? String(e);
  return cause?.code ? `${message} (${cause.code})` : message;
}

/**
 * Whether a tool URL has a `{{placeholder}}` before its path (scheme, credentials, host or port).
 * Filled from the model's arguments, it would let the caller choose where the tool's stored token
 * goes; the path and query are encoded per value, so placeholders there cannot move the host.
 */
export function placeholderBeforePath(url: string): boolean {
  const scheme = url.indexOf('://');
  const start = scheme < 0 ? 0 : scheme + 3;
  const rest = url.slice(start);
  const end = rest.search(/[/?#]/);
  return (end < 0 ? rest : rest.slice(0, end)).includes('{{') || url.slice(0, start).includes('{{');
}

/** `{{name}}` in a template; the three forms below are the one pattern anchored three ways. */
const PLACEHOLDER = /\{\{\s*([\w.-]+)\s*\}\}/;
const PLACEHOLDER_AT = new RegExp(PLACEHOLDER.source, 'y');
const PLACEHOLDERS = new RegExp(PLACEHOLDER.source, 'g');
const WHOLE_PLACEHOLDER = new RegExp(`^${PLACEHOLDER.source}$`);

/**
 * A string body template sent as JSON: a placeholder inside a JSON string gets the value's
 * escaped text, one outside gets the value as JSON. The caller's words can neither break the JSON
 * nor add keys to it (they were pasted in raw: `x","role":"admin` added a key).
 */
export function fillJsonText(template: string, args: Record<string, unknown>): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < template.length; ) {
    if (template.charCodeAt(i) === 123 /* { */ && template.charCodeAt(i + 1) === 123) {
      PLACEHOLDER_AT.lastIndex = i;
      const m = PLACEHOLDER_AT.exec(template);
      if (m) {
        const v = args[m[1]!];
        if (inString) out += JSON.stringify(v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v)).slice(1, -1);
        else out += JSON.stringify(v ?? null);
        i += m[0].length;
        continue;
      }
    }
    const c = template[i]!;
    if (inString && c === '\\') {
      out += template.slice(i, i + 2);
      i += 2;
      continue;
    }
    if (c === '"') inString = !inString;
    out += c;
    i++;
  }
  return out;
}

/** Replaces `{{arg}}` in a template (object, array or string) with the model's arguments. */
export function fillTemplate(template: unknown, args: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = WHOLE_PLACEHOLDER.exec(template);
    if (whole) return args[whole[1]] ?? null;
    return fillString(template, args, false);
  }
  if (Array.isArray(template)) return template.map((t) => fillTemplate(t, args));
  if (template && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillTemplate(v, args)]));
  }
  return template;
}

/**
 * The credential header of the tool's token: `x-api-key` for api_key, `Authorization` for bearer
 * and basic. A token stored without a type (`none`, the default) goes as Bearer, as it always has,
 * unless the tool's own headers carry an `Authorization`: theirs is then the one sent (both were
 * sent, joined by a comma). Setting `auth_type: none` explicitly clears the token (the handlers).
 */
function credentialHeader(tool: HttpToolConfig, headers: Record<string, string>): [string, string] | undefined {
  if (!tool.auth_token) return undefined;
  if (tool.auth_type === 'api_key') return ['x-api-key', tool.auth_token];
  if (tool.auth_type === 'basic') return ['authorization', `Basic ${Buffer.from(tool.auth_token).toString('base64')}`];
  if (tool.auth_type !== 'bearer' && headerNames(headers, 'authorization').length > 0) return undefined;
  return ['authorization', `Bearer ${tool.auth_token}`];
}

/** The keys of `headers` that name `lowerName` in any letter case. */
function headerNames(headers: Record<string, string>, lowerName: string): string[] {
  return Object.keys(headers).filter((name) => name.toLowerCase() === lowerName);
}

/**
 * A header value filled from the model's arguments, made sendable: control characters become
 * spaces (one line: a value cannot add a header) and characters outside ASCII are percent-encoded
 * as UTF-8 (fetch refuses them; Latin-1 ones went out as bytes a UTF-8 server misreads).
 */
function headerValue(filled: string): string {
  return filled.replace(/[\x00-\x1f\x7f]/g, ' ').replace(/[^\x20-\x7e]+/gu, (run) => Buffer.from(run, 'utf8').toString('hex').replace(/../g, '%$&').toUpperCase());
}

function fillString(s: string, args: Record<string, unknown>, encode: boolean): string {
  return s.replace(PLACEHOLDERS, (_m, k: string) => {
    const v = args[k];
    const str = v === undefined || v === null ? '' : typeof v === 'string' ? v : JSON.stringify(v);
    return encode ? encodeURIComponent(str) : str;
  });
}

/** `a.b.0.c` into a JSON value; empty path returns the value itself. */
export function pickPath(value: unknown, path?: string): unknown {
  if (!path) return value;
  let cur: unknown = value;
  for (const part of path.replace(/^\$\.?/, '').split('.').filter(Boolean)) {
    if (cur === null || cur === undefined) return undefined;
    cur = (cur as Record<string, unknown>)[part];
  }
  return cur;
}
