/**
 * Server-sent events off a vendor's streaming HTTP body, parsed by `eventsource-parser` (WHATWG
 * "event stream" rules: LF, CR or CRLF line ends, `:` comments as keep-alives, multi-line `data:`
 * joined with LF, `event:` names the event, a blank line dispatches). This file only adapts it:
 * bytes to text (a streaming TextDecoder, so UTF-8 characters split across network chunks are
 * whole), a bound on buffered data, and the lenient end of body.
 */
import { createParser, type EventSourceParser } from 'eventsource-parser';
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
  private readonly parser: EventSourceParser;
  /** Events dispatched by the current `feed`; the parser reports them through callbacks. */
  private out: SseEvent[] = [];
  private overflowed = false;

  constructor(private readonly provider: string) {
    this.parser = createParser({
      maxBufferSize: MAX_SSE_EVENT_CHARS,
      onEvent: (e) => this.out.push({ event: e.event ?? '', data: e.data }),
      // Unknown fields and a bad `retry` are ignored, as before (`id`/`retry` mean nothing for a
      // one-shot POST stream); only the buffer bound is an error.
      onError: (e) => {
        if (e.type === 'max-buffer-size-exceeded') this.overflowed = true;
      },
    });
  }

  push(bytes: Uint8Array): SseEvent[] {
    return this.feed(this.decoder.decode(bytes, { stream: true }));
  }

  /**
   * End of body: a last event without its blank line is still dispatched (lenient; some
   * compatible servers omit it): the missing line end and blank line are fed in.
   */
  end(): SseEvent[] {
    return this.feed(`${this.decoder.decode()}\n\n`);
  }

  private feed(text: string): SseEvent[] {
    if (this.overflowed) this.overflow();
    this.parser.feed(text);
    if (this.overflowed) this.overflow();
    const out = this.out;
    this.out = [];
    return out;
  }

  private overflow(): never {
    throw new ProviderError({
      provider: this.provider,
      code: 'MALFORMED_RESPONSE',
      message: `${this.provider}: SSE event larger than ${MAX_SSE_EVENT_CHARS} chars`,
    });
  }
}

/**
 * Reads SSE events off an HTTP body until it ends. The caller cancels `body` in its finally.
 * Keep-alive comments reset the body's byte idle timer but carry nothing: a stream that sends only
 * comments for the idle bound after its first event is as stalled as a silent one (a vendor
 * pinging every 5 s held a turn open with no answer and no error). Before the first event comments
 * may go on (a router announcing a slow model's queue): the turn's own time bound applies then.
 */
export async function* sseEvents(body: HttpByteStream, provider: string): AsyncGenerator<SseEvent> {
  const parser = new SseParser(provider);
  const { clock, timeoutMs } = body.idle;
  let lastEventAt = -1;
  for (;;) {
    const chunk = await body.next();
    if (chunk === null) {
      yield* parser.end();
      return;
    }
    const events = parser.push(chunk);
    if (events.length > 0) lastEventAt = clock.monotonicMs();
    else if (lastEventAt >= 0 && clock.monotonicMs() - lastEventAt > timeoutMs) {
      throw new ProviderError({ provider, code: 'IDLE_TIMEOUT', retryable: true, message: `${provider}: only keep-alives for ${timeoutMs} ms mid-stream` });
    }
    yield* events;
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
