/**
 * HTTP tools from the agent config. A tool call never throws into the call: every failure
 * (timeout, HTTP error, bad JSON, crashed endpoint) becomes an error result the model can read.
 */
import type { HttpToolConfig } from '../../shared/voice/session-config.js';

export interface ToolResult {
  status: 'success' | 'error';
  /** What the model sees (a string; JSON for structured output). */
  content: string;
  /** The full output for the record. */
  output: unknown;
  error?: string;
  latencyMs: number;
  attempts: number;
}

const MAX_RESPONSE_BYTES = 256 * 1024;

export async function runHttpTool(tool: HttpToolConfig, argsJson: string, signal: AbortSignal, now: () => number = () => performance.now()): Promise<ToolResult> {
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
  for (let attempt = 1; attempt <= attemptsAllowed; attempt++) {
    if (signal.aborted) return errorResult('cancelled', started, now, attempt - 1);
    try {
      const output = await callOnce(tool, args, signal);
      const picked = pickPath(output, tool.response_path);
      return {
        status: 'success',
        content: typeof picked === 'string' ? picked : JSON.stringify(picked ?? null),
        output,
        latencyMs: Math.round(now() - started),
        attempts: attempt,
      };
    } catch (e) {
      lastError = (e as Error).message;
      if ((e as { retryable?: boolean }).retryable === false) break;
    }
  }
  return errorResult(lastError, started, now, attemptsAllowed);
}

function errorResult(message: string, started: number, now: () => number, attempts: number): ToolResult {
  return {
    status: 'error',
    content: JSON.stringify({ error: message }),
    output: { error: message },
    error: message,
    latencyMs: Math.round(now() - started),
    attempts,
  };
}

async function callOnce(tool: HttpToolConfig, args: Record<string, unknown>, outer: AbortSignal): Promise<unknown> {
  const method = (tool.http_method || 'POST').toUpperCase();
  const url = new URL(fillString(tool.endpoint_url, args, true));
  const headers: Record<string, string> = { accept: 'application/json', ...tool.headers };
  if (tool.auth_token) {
    if (tool.auth_type === 'api_key') headers['x-api-key'] = tool.auth_token;
    else if (tool.auth_type === 'basic') headers.authorization = `Basic ${Buffer.from(tool.auth_token).toString('base64')}`;
    else headers.authorization = `Bearer ${tool.auth_token}`;
  }
  let body: string | undefined;
  if (method === 'GET' || method === 'DELETE') {
    for (const [k, v] of Object.entries(args)) if (!url.searchParams.has(k) && !tool.endpoint_url.includes(`{{${k}}}`)) url.searchParams.set(k, String(v));
  } else {
    const payload = tool.request_body === undefined || tool.request_body === null || tool.request_body === '' ? args : fillTemplate(tool.request_body, args);
    body = typeof payload === 'string' ? payload : JSON.stringify(payload);
    headers['content-type'] ??= 'application/json';
  }
  const timeout = AbortSignal.timeout(Math.max(1, tool.timeout_ms || 10_000));
  const signal = AbortSignal.any([outer, timeout]);
  let res: Response;
  try {
    res = await fetch(url, { method, headers, body, signal });
  } catch (e) {
    if (timeout.aborted) throw Object.assign(new Error(`timed out after ${tool.timeout_ms} ms`), { retryable: true });
    if (outer.aborted) throw Object.assign(new Error('cancelled'), { retryable: false });
    throw Object.assign(new Error(`request failed: ${(e as Error).message}`), { retryable: true });
  }
  const text = await readLimited(res);
  if (!res.ok) {
    throw Object.assign(new Error(`HTTP ${res.status}: ${text.slice(0, 200)}`), { retryable: res.status >= 500 || res.status === 429 });
  }
  try {
    return text ? JSON.parse(text) : null;
  } catch {
    return text;
  }
}

async function readLimited(res: Response): Promise<string> {
  const reader = res.body?.getReader();
  if (!reader) return '';
  const chunks: Uint8Array[] = [];
  let size = 0;
  for (;;) {
    const { done, value } = await reader.read();
    if (done) break;
    size += value.length;
    if (size > MAX_RESPONSE_BYTES) {
      await reader.cancel();
      throw Object.assign(new Error(`response larger than ${MAX_RESPONSE_BYTES} bytes`), { retryable: false });
    }
    chunks.push(value);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** Replaces `{{arg}}` in a template (object, array or string) with the model's arguments. */
export function fillTemplate(template: unknown, args: Record<string, unknown>): unknown {
  if (typeof template === 'string') {
    const whole = /^\{\{\s*([\w.-]+)\s*\}\}$/.exec(template);
    if (whole) return args[whole[1]] ?? null;
    return fillString(template, args, false);
  }
  if (Array.isArray(template)) return template.map((t) => fillTemplate(t, args));
  if (template && typeof template === 'object') {
    return Object.fromEntries(Object.entries(template).map(([k, v]) => [k, fillTemplate(v, args)]));
  }
  return template;
}

function fillString(s: string, args: Record<string, unknown>, encode: boolean): string {
  return s.replace(/\{\{\s*([\w.-]+)\s*\}\}/g, (_m, k: string) => {
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
