/**
 * Incremental server-sent-events parser (WHATWG "event stream" rules, the subset vendors use):
 * lines end in LF or CRLF; `:` lines are comments (keep-alives); `data:` lines accumulate and are
 * joined with LF; `event:` names the event; a blank line dispatches. UTF-8 characters split across
 * network chunks are handled by a streaming TextDecoder.
 */
import { ProviderError } from './errors.js';
import type { HttpByteStream } from './http.js';

export interface SseEvent {
  /** The `event:` field, '' when absent (OpenAI sends none; Anthropic always does). */
  event: string;
  data: string;
}

/**
 * Bound on one unterminated line or one event's data. Overflow policy: the stream is rejected
 * with MALFORMED_RESPONSE (a vendor never sends megabyte events; this protects memory from a
 * broken proxy streaming without newlines).
 */
export const MAX_SSE_EVENT_CHARS = 1024 * 1024;

export class SseParser {
  private readonly decoder = new TextDecoder('utf-8');
  private partial = '';
  private dataLines: string[] = [];
  private dataChars = 0;
  private eventName = '';

  constructor(private readonly provider: string) {}

  push(bytes: Uint8Array): SseEvent[] {
    return this.consume(this.decoder.decode(bytes, { stream: true }), false);
  }

  /** End of body: a last event without its blank line is still dispatched (lenient; some compatible servers omit it). */
  end(): SseEvent[] {
    return this.consume(this.decoder.decode(), true);
  }

  private consume(text: string, atEnd: boolean): SseEvent[] {
    const out: SseEvent[] = [];
    let buf = this.partial + text;
    let nl: number;
    while ((nl = buf.indexOf('\n')) >= 0) {
      let line = buf.slice(0, nl);
      buf = buf.slice(nl + 1);
      if (line.endsWith('\r')) line = line.slice(0, -1);
      this.line(line, out);
    }
    if (atEnd) {
      if (buf !== '') this.line(buf.endsWith('\r') ? buf.slice(0, -1) : buf, out);
      this.line('', out);
      buf = '';
    }
    if (buf.length > MAX_SSE_EVENT_CHARS) this.overflow();
    this.partial = buf;
    return out;
  }

  private line(line: string, out: SseEvent[]): void {
    if (line === '') {
      if (this.dataLines.length > 0) out.push({ event: this.eventName, data: this.dataLines.join('\n') });
      this.dataLines = [];
      this.dataChars = 0;
      this.eventName = '';
      return;
    }
    if (line.startsWith(':')) return;
    const colon = line.indexOf(':');
    const field = colon < 0 ? line : line.slice(0, colon);
    let value = colon < 0 ? '' : line.slice(colon + 1);
    if (value.startsWith(' ')) value = value.slice(1);
    if (field === 'data') {
      this.dataLines.push(value);
      this.dataChars += value.length;
      if (this.dataChars > MAX_SSE_EVENT_CHARS) this.overflow();
    } else if (field === 'event') {
      this.eventName = value;
    }
    // `id` and `retry` are meaningless for a one-shot POST stream: ignored.
  }

  private overflow(): never {
    throw new ProviderError({
      provider: this.provider,
      code: 'MALFORMED_RESPONSE',
      message: `${this.provider}: SSE event larger than ${MAX_SSE_EVENT_CHARS} chars`,
    });
  }
}

/** Reads SSE events off an HTTP body until it ends. The caller cancels `body` in its finally. */
export async function* sseEvents(body: HttpByteStream, provider: string): AsyncGenerator<SseEvent> {
  const parser = new SseParser(provider);
  for (;;) {
    const chunk = await body.next();
    if (chunk === null) {
      yield* parser.end();
      return;
    }
    yield* parser.push(chunk);
  }
}

/** JSON.parse that turns a broken chunk into MALFORMED_RESPONSE instead of a SyntaxError. */
export function parseJsonChunk(provider: string, data: string): Record<string, unknown> {
  try {
    const v: unknown = JSON.parse(data);
    if (v && typeof v === 'object' && !Array.isArray(v)) return v as Record<string, unknown>;
  } catch (cause) {
    throw new ProviderError({
      provider,
      code: 'MALFORMED_RESPONSE',
      message: `${provider}: unparseable stream chunk: ${data.slice(0, 120)}`,
      cause,
    });
  }
  throw new ProviderError({
    provider,
    code: 'MALFORMED_RESPONSE',
    message: `${provider}: stream chunk is not a JSON object: ${data.slice(0, 120)}`,
  });
}
