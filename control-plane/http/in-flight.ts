/**
 * The requests a server is answering now (a graceful close waits for them), as a list threaded
 * through the responses themselves.
 *
 * Not a `Set`: with ~25 responses answered per event-loop turn, a long-lived Set's table is
 * rehashed over and over, and V8 keeps each obsolete table (with the responses it held) linked to
 * its successor for live iterators. A scavenge cannot tell that an old table is dead, so every
 * response it names survives and is promoted, and the next table keeps the next ones: ~2 MB
 * promoted per scavenge, GC at 13-15 % of a cached GET, until a full mark-compact breaks the
 * chain (`--trace-gc-nvp`, issue 13). Here a response that leaves is unlinked and its own links
 * cleared, so a dead response refers to no other.
 */
import type { NodeRes } from './rest.js';

const kPrev = Symbol('voiceplane.inFlight.prev');
const kNext = Symbol('voiceplane.inFlight.next');
const kListed = Symbol('voiceplane.inFlight.listed');

type Linked = NodeRes & { [kPrev]?: Linked; [kNext]?: Linked; [kListed]?: boolean };

export class InFlight {
  private head: Linked | undefined;
  private count = 0;

  get size(): number {
    return this.count;
  }

  add(res: NodeRes): void {
    const r = res as Linked;
    if (r[kListed]) return;
    r[kListed] = true;
    r[kPrev] = undefined;
    r[kNext] = this.head;
    if (this.head) this.head[kPrev] = r;
    this.head = r;
    this.count++;
  }

  delete(res: NodeRes): void {
    const r = res as Linked;
    if (!r[kListed]) return;
    const prev = r[kPrev];
    const next = r[kNext];
    if (prev) prev[kNext] = next;
    else this.head = next;
    if (next) next[kPrev] = prev;
    r[kPrev] = r[kNext] = undefined;
    r[kListed] = false;
    this.count--;
  }

  /**
   * Removes the HTTP/1.1 responses of a connection that closed. A client that pipelines requests
   * and hangs up leaves the responses queued behind the first without a socket: Node never emits
   * their 'close', so without this they would stay listed (a graceful close waiting its whole
   * grace, and memory a hostile client could grow).
   */
  deleteConnection(socket: object): void {
    for (let r = this.head; r; ) {
      const next: Linked | undefined = r[kNext];
      if ((r as { req?: { socket?: object } }).req?.socket === socket) this.delete(r);
      r = next;
    }
  }

  /** Newest first; walk it synchronously (a response leaving during an `await` may end the walk early). */
  *[Symbol.iterator](): IterableIterator<NodeRes> {
    for (let r = this.head; r; ) {
      const next: Linked | undefined = r[kNext];
      yield r;
      r = next;
    }
  }
}
