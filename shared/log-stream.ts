/**
 * The process's log output: lines logged in one event-loop turn go to the asynchronous writer
 * (pino's sonic-boom) as one string at the end of the turn.
 *
 * Why not hand each line to sonic-boom: while a write is in flight it appends every new line to
 * its last pending string and then measures that string's UTF-8 length, which flattens the
 * growing string again on every line (up to 16 kB copied per line). With the access log of a busy
 * control plane that was 2-4 % of a cached GET in string flattening and copies (issue 13). A
 * turn's lines joined once cost one append and one measurement.
 *
 * One writer per destination per process (every logger of the process shares stdout's), so lines
 * keep their order across loggers. Lines still pending when the process exits are written
 * synchronously, after what the writer itself held. What asynchronous writing still risks at exit
 * (pino documents it): the one piece (<= 16 KiB) whose write is queued on the thread pool may never
 * be written, or be written after the lines the exit hook writes; nothing here can see when it runs.
 */
import fs from 'node:fs';
import { pino } from 'pino';

/**
 * Most log text held while stdout is slower than the process (a stuck log shipper): past it lines
 * are dropped, not buffered without bound.
 */
const MAX_PENDING_LOG_BYTES = 16 * 1024 * 1024;
/** A turn that logs more than this many lines hands them over early (bounded memory per turn). */
const MAX_LINES_PER_TURN = 1024;
/** Largest piece handed to the writer: sonic-boom's default `maxWrite` (16 KiB). */
const MAX_PIECE_CHARS = 16 * 1024;
/** How long a synchronous write (exit, fatal) retries a full pipe before giving the rest up. */
const SYNC_WRITE_DEADLINE_MS = 2000;
const SYNC_RETRY_MS = 10;
const sleeper = new Int32Array(new SharedArrayBuffer(4));

// Captured at load: a test's fake timers must not hold real log lines back.
const atTurnEnd = setImmediate;

type Writer = ReturnType<typeof pino.destination>;

export class TurnBatchedLogStream {
  private lines: string[] = [];

  constructor(private readonly writer: Writer) {}

  write(line: string): boolean {
    this.lines.push(line);
    if (this.lines.length === 1) atTurnEnd(this.handOver);
    else if (this.lines.length >= MAX_LINES_PER_TURN) this.handOver();
    return true;
  }

  /**
   * The turn's lines to the writer (asynchronous), in pieces of at most its own write size:
   * sonic-boom has one piece in flight at a time and its `flushSync` (a fatal line, exit) writes
   * every piece but that one, so a turn handed over whole could lose up to 1,024 lines at a crash.
   */
  readonly handOver = (): void => {
    const lines = this.lines;
    if (lines.length === 0) return;
    this.lines = [];
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
    const text = this.lines.join('');
    this.lines = [];
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

const streams = new Map<number | string, TurnBatchedLogStream>();

/** The shared log stream of `dest` (a file descriptor, default stdout, or a path). */
export function logStream(dest: number | string = 1): TurnBatchedLogStream {
  let stream = streams.get(dest);
  if (!stream) {
    const writer = pino.destination({ dest, sync: false, maxLength: MAX_PENDING_LOG_BYTES });
    stream = new TurnBatchedLogStream(writer);
    if (streams.size === 0) process.once('exit', flushAllSync);
    streams.set(dest, stream);
  }
  return stream;
}

function flushAllSync(): void {
  for (const s of streams.values()) s.flushSync();
}
