/**
 * Fault injection shared by the vendor fakes. A fault set applies either to the next request or
 * connection only (`once`, queued in order) or to every one (`always`); `once` wins over `always`
 * field by field.
 */
export interface Faults {
  /** Delay before the response's first byte (HTTP) or before accepting the upgrade (WebSocket). */
  slowFirstByteMs?: number;
  /** Drop the TCP connection without a proper end after the first chunk(s) of the stream. */
  disconnectMidStream?: boolean;
  /** Answer 429 with `Retry-After: <seconds>`. */
  status429RetryAfterS?: number;
  /** Answer 500. */
  status500?: boolean;
  /** Answer 200 with this JSON body instead of the vendor's (a proxy, an API version change). */
  unexpectedBody?: unknown;
  /** Send one unparseable chunk/message mid-stream (WebSocket fakes: a string is sent as that exact text frame). */
  malformedChunk?: boolean | string;
  /** WebSocket: accept the upgrade, send the vendor's first message (Deepgram `Metadata`), then close 1011. */
  greetThenClose?: boolean;
  /** Send a vendor error object/event mid-stream (OpenAI `{"error":…}`, Anthropic `event: error`). */
  errorMidStream?: boolean;
}

export class FaultInjector {
  private persistent: Faults = {};
  private readonly queue: Faults[] = [];

  /** Applies to the next request/connection only (queued: call twice for the next two). */
  once(f: Faults): this {
    this.queue.push(f);
    return this;
  }

  /** Applies to every request/connection until `clear()`. */
  always(f: Faults): this {
    this.persistent = { ...f };
    return this;
  }

  clear(): void {
    this.persistent = {};
    this.queue.length = 0;
  }

  /** Consumes the faults for one request/connection. */
  take(): Faults {
    return { ...this.persistent, ...(this.queue.shift() ?? {}) };
  }
}

/** Resolves after `ms` (fakes simulate vendor latency; tests never sleep on these). */
export function delay(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms));
}

/** A promise with its resolver exposed, for "the fake saw X" assertions. */
export function deferred<T = void>(): { promise: Promise<T>; resolve: (v: T) => void } {
  let resolve!: (v: T) => void;
  const promise = new Promise<T>((r) => (resolve = r));
  return { promise, resolve };
}
