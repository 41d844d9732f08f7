/**
 * The process's log output: lines go to the asynchronous writer (pino's sonic-boom) in batches,
 * `HANDOVER_MS` after the first line of a batch, or at once when the next line would take the
 * batch past 16 KiB (one write) or 1,024 lines.
 *
 * Why not hand each line to sonic-boom: it starts a write (an `fs.write` on the thread pool, then
 * a completion back on the event loop) as soon as it has data and none is in flight, so a busy
 * control plane paid one thread-pool round trip per one or two access lines: ~4 us of a cached
 * GET's ~58 us (issue 13; `rest.js --log-level warn` against `info`). And while a write is in
 * flight sonic-boom appends every new line to its pending string and measures that string's UTF-8
 * length, flattening it again on every line (2-4 % of the same GET). A batch joined once costs one
 * append and one measurement, and the writes are at most ~100 a second whatever the traffic.
 * Batching by event-loop turn, as this did before, still wrote once per turn: at 15k requests a
 * second a turn holds one or two.
 *
 * One writer per destination per process (every logger of the process shares stdout's), so lines
 * keep their order across loggers. Lines still pending when the process exits are written
 * synchronously, after what the writer itself held. What asynchronous writing still risks at exit
 * (pino documents it): the one piece (<= 16 KiB) whose write is queued on the thread pool may never
 * be written, or be written after the lines the exit hook writes; nothing here can see when it runs.
 * A process killed outright (SIGKILL, a native crash) also loses the last `HANDOVER_MS` of lines.
 */
import fs from 'node:fs';
import { pino } from 'pino';

/**
 * Most log text held while stdout is slower than the process (a stuck log shipper): past it lines
 * are dropped, not buffered without bound.
 */
const MAX_PENDING_LOG_BYTES = 16 * 1024 * 1024;
/** Longest a line waits for its batch to be handed over. */
export const HANDOVER_MS = 10;
/** A batch of this many lines is handed over at once (bounded memory per batch). */
const MAX_LINES_PER_BATCH = 1024;
/** Largest piece handed to the writer: sonic-boom's default `maxWrite` (16 KiB). */
const MAX_PIECE_CHARS = 16 * 1024;
/** How long a synchronous write (exit, fatal) retries a full pipe before giving the rest up. */
const SYNC_WRITE_DEADLINE_MS = 2000;
const SYNC_RETRY_MS = 10;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

// Captured at load: a test's fake timers must not hold real log lines back.
const realSetTimeout = setTimeout;
const realClearTimeout = clearTimeout;

type Writer = ReturnType<typeof pino.destination>;

export class BatchedLogStream {
  private lines: string[] = [];
  private chars = 0;
  private timer: ReturnType<typeof setTimeout> | undefined;

  /** `handoverMs`: how long the first line of a batch may wait (tests shorten it). */
  constructor(
    private readonly writer: Writer,
    private readonly handoverMs = HANDOVER_MS,
  ) {}

  write(line: string): boolean {
    // A full batch goes before this line would push it past one write's size (or line count).
    if (this.lines.length > 0 && (this.chars + line.length > MAX_PIECE_CHARS || this.lines.length >= MAX_LINES_PER_BATCH)) this.handOver();
    this.lines.push(line);
    this.chars += line.length;
    if (this.timer === undefined) {
      // Unref'd: a pending batch never keeps the process alive; the exit hook writes it.
      this.timer = realSetTimeout(this.handOver, this.handoverMs);
      this.timer.unref?.();
    }
    return true;
  }

  /**
   * The batch's lines to the writer (asynchronous), in pieces of at most its own write size:
   * sonic-boom has one piece in flight at a time and its `flushSync` (a fatal line, exit) writes
   * every piece but that one, so a batch handed over whole could lose up to 1,024 lines at a crash.
   */
  readonly handOver = (): void => {
    if (this.timer !== undefined) {
      realClearTimeout(this.timer);
      this.timer = undefined;
    }
    const lines = this.lines;
    if (lines.length === 0) return;
    this.lines = [];
    this.chars = 0;
    let piece = '';
    for (const line of lines) {
      if (piece.length > 0 && piece.length + line.length > MAX_PIECE_CHARS) {
        this.give(piece);
        piece = '';
      }
      piece += line;
    }
    this.give(piece);
  };

  /** pino's `logger.flush(cb)`. */
  flush(cb?: (err?: Error) => void): void {
    this.handOver();
    try {
      this.writer.flush(cb);
    } catch (err) {
      cb?.(err as Error);
    }
  }

  /** Everything held, written synchronously (a fatal line, process exit). */
  flushSync(): void {
    if (this.timer !== undefined) {
      realClearTimeout(this.timer);
      this.timer = undefined;
    }
    const text = this.lines.join('');
    this.lines = [];
    this.chars = 0;
    try {
      this.writer.flushSync();
    } catch {
      // Not open yet, or destroyed (EPIPE): nothing the writer held can be written.
    }
    if (text !== '') this.writeSync(text);
  }

  private give(piece: string): void {
    try {
      this.writer.write(piece);
    } catch {
      // The writer was ended (pino ends it once the event loop is empty): write directly.
      this.writeSync(piece);
    }
  }

  /**
   * Writes `text` whole, as sonic-boom's own `flushSync` does: a non-blocking pipe takes part of it
   * or answers EAGAIN while its reader is behind, so the rest is retried for up to
   * `SYNC_WRITE_DEADLINE_MS`.
   */
  private writeSync(text: string): void {
    // sonic-boom's descriptor (not in its typings); negative until a path has been opened.
    const fd = (this.writer as unknown as { fd: number }).fd;
    if (!(fd >= 0)) return;
    let rest = Buffer.from(text);
    const until = Date.now() + SYNC_WRITE_DEADLINE_MS;
    while (rest.length > 0) {
      try {
        rest = rest.subarray(fs.writeSync(fd, rest));
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EAGAIN' || Date.now() > until) return;
        Atomics.wait(sleeper, 0, 0, SYNC_RETRY_MS);
      }
    }
  }
}

const streams = new Map<number | string, BatchedLogStream>();

/** The shared log stream of `dest` (a file descriptor, default stdout, or a path). */
export function logStream(dest: number | string = 1): BatchedLogStream {
  let stream = streams.get(dest);
  if (!stream) {
    const writer = pino.destination({ dest, sync: false, maxLength: MAX_PENDING_LOG_BYTES });
    stream = new BatchedLogStream(writer);
    if (streams.size === 0) process.once('exit', flushAllSync);
    streams.set(dest, stream);
  }
  return stream;
}

function flushAllSync(): void {
  for (const s of streams.values()) s.flushSync();
}
