/**
 * REST answers produced in one event-loop turn are sent together at its end (`setImmediate`, the
 * check phase right after the poll phase that read their requests), the way uWebSockets corks
 * a loop iteration's writes and Netty consolidates flushes.
 *
 * Why: each `res.end` is one `writev`, and on a socket whose reader sleeps the kernel wakes the
 * reader inside that system call. Answering requests one by one as each resolves wakes a local
 * peer (a load balancer or sidecar on the host, a load generator) once per response; ending a
 * turn's answers back to back wakes it once per turn. Measured on the cached `GET agent` route:
 * 57 -> 44 us of server CPU per request, 17.8k -> 25k req/s (docs/benchmarks.md, issue 13).
 *
 * Cost: an answer waits for the rest of its turn's I/O callbacks, which are bounded by what one
 * poll phase reads (libuv caps it at 1,024 events). The status and headers are set at once
 * (`writeHead`), so `headersSent` still guards against a second answer.
 */
import type { NodeRes } from './rest.js';

// Captured at load: a test's fake timers must not hold real answers back.
const atTurnEnd = setImmediate;

let responses: NodeRes[] = [];
let bodies: string[] = [];

/** Ends `res` with `body` at the end of this event-loop turn. */
export function endThisTurn(res: NodeRes, body: string): void {
  responses.push(res);
  bodies.push(body);
  if (responses.length === 1) atTurnEnd(endQueuedAnswers);
}

/** Ends every queued answer now (also a server closing without grace, before it cuts its sockets). */
export function endQueuedAnswers(): void {
  const rs = responses;
  const bs = bodies;
  responses = [];
  bodies = [];
  for (let i = 0; i < rs.length; i++) {
    try {
      rs[i]!.end(bs[i]);
    } catch {
      // One broken response must not keep the rest of the turn's answers from their clients.
      rs[i]!.destroy();
    }
  }
}
