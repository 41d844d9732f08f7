/**
 * Test-run progress as server-sent events (spec doc 1, "Events"):
 * `GET /api/v1/agents/test-runs/{runId}/stream` (bearer; another workspace's run is 404).
 * Each event is `data: {"run": <test run>, "results": [<test result>, ...]}`: one at once, then one
 * per poll (every `pollMs`, default 2 s) and one as soon as this process's runner changes the run;
 * after the event that shows `completed`, `failed` or `cancelled` the server closes the stream.
 *
 * Bounds: `maxStreams` open streams per process (beyond: 503), `maxStreamsPerUser` per user
 * (beyond: 429), both with `Retry-After`; a client that does not read is
 * never buffered for: while the socket is blocked, ticks are skipped (the next event carries the
 * whole state anyway).
 */
import type { ServerResponse } from 'node:http';
import { create, toJson } from '@bufbuild/protobuf';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { Sql } from '../../shared/db/client.js';
import { SimTestService, TestResultSchema, TestRunSchema } from '../../shared/gen/voiceplane/v1/simtests_pb.js';
import type { NodeReq, NodeRes } from '../http/rest.js';
import { rawHandlerContext, sendError, streamAdmission } from '../conversations/http-util.js';
import type { RunChanges } from './changes.js';
import * as store from './store.js';
import { resultView, runView } from './views.js';
import { RESULT_NULLABLE, RUN_NULLABLE } from './routes.js';
import { withNulls } from '../http/envelope.js';

type Json = Record<string, unknown>;
import { rawRoute, requestUrl } from '../http/request-url.js';

const STREAM_PATH = /^\/api\/v1\/agents\/test-runs\/([^/]+)\/stream\/?$/;
const JSON_OPTS = { useProtoFieldName: true, alwaysEmitImplicit: true } as const;

export interface RunStreamOptions {
  sql: Sql;
  clock: Clock;
  logger: Logger;
  changes: RunChanges;
  /** Checks the caller may read the run (the service's `getTestRun`, so fencing is the same). */
  getRun: (runId: string, ctx: ReturnType<typeof rawHandlerContext>) => Promise<unknown>;
  /** Default 2000 ms (the spec's poll interval). */
  pollMs?: number;
  /** Default 200. */
  maxStreams?: number;
  /** Default 20: one user (or one leaking dashboard) cannot take every slot. */
  maxStreamsPerUser?: number;
  /** Who is asking (their streams are counted per user). */
  principalId: (ctx: ReturnType<typeof rawHandlerContext>) => Promise<string>;
}

export function createRunStream(opts: RunStreamOptions) {
  const pollMs = opts.pollMs ?? 2000;
  const admission = streamAdmission('test-run', opts.maxStreams ?? 200, opts.maxStreamsPerUser ?? 20);
  const open = new Set<() => void>();

  const handler = rawRoute((req, url) => req.method === 'GET' && STREAM_PATH.test(url.pathname), async (req, anyRes) => {
    const m = STREAM_PATH.exec(requestUrl(req).pathname)!;
    const ac = new AbortController();
    anyRes.once('close', () => ac.abort());
    let release: (() => void) | undefined;
    try {
      const ctx = rawHandlerContext(req, SimTestService, SimTestService.method.getTestRun, ac.signal);
      // Counted before the next await: a burst of requests cannot all pass the check together.
      release = admission.admit(await opts.principalId(ctx));
      await opts.getRun(m[1]!, ctx);
      serve(req, anyRes as ServerResponse, m[1]!.toLowerCase(), ac.signal, release);
    } catch (err) {
      release?.();
      sendError(anyRes, err, opts.logger);
    }
    return true;
  });

  function serve(req: NodeReq, res: ServerResponse, runId: string, signal: AbortSignal, release: () => void): void {
    const headers: Record<string, string> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' };
    if (req.httpVersionMajor === 1) headers.connection = 'keep-alive';
    res.writeHead(200, headers);
    if (typeof res.flushHeaders === 'function') res.flushHeaders();
    let finished = false;
    let blocked = false;
    let busy = false;
    let again = false;
    let timer: TimerHandle | undefined;
    const finish = () => {
      if (finished) return;
      finished = true;
      open.delete(finish);
      release();
      opts.clock.clearInterval(timer);
      unsubscribe();
      res.end();
    };
    open.add(finish);
    signal.addEventListener('abort', finish, { once: true });
    // The client left while it was being admitted: the abort already fired (or its socket closed
    // before the handler could listen for it), so nothing else would ever call finish.
    if (signal.aborted || res.destroyed) return finish();

    const tick = async (): Promise<void> => {
      if (finished) return;
      // A socket gone without a close event reaching us: a blocked stream would wait for ever.
      if (res.destroyed) return finish();
      if (blocked) return;
      // One read at a time; a change notice during a read triggers one more right after.
      if (busy) {
        again = true;
        return;
      }
      busy = true;
      try {
        const [run, results] = await Promise.all([store.getRun(opts.sql, runId), store.listResults(opts.sql, runId)]);
        if (finished) return;
        if (!run) return finish();
        const data = {
          // The routes' JSON exactly: unset fields as null (routes.ts).
          run: withNulls(toJson(TestRunSchema, create(TestRunSchema, runView(run)), JSON_OPTS) as Json, RUN_NULLABLE),
          results: results.map((r) => withNulls(toJson(TestResultSchema, create(TestResultSchema, resultView(r)), JSON_OPTS) as Json, RESULT_NULLABLE)),
        };
        if (!res.write(`data: ${JSON.stringify(data)}\n\n`)) {
          blocked = true;
          res.once('drain', () => (blocked = false));
        }
        if (store.FINISHED_RUN.includes(run.status)) return finish();
      } catch (err) {
        opts.logger.warn({ err, runId }, 'test-run stream read failed; retried at the next poll');
      } finally {
        busy = false;
      }
      if (again && !finished) {
        again = false;
        await tick();
      }
    };
    const unsubscribe = opts.changes.on(runId, () => void tick());
    timer = opts.clock.setInterval(() => void tick(), pollMs);
    void tick();
  }

  return {
    handler,
    /** Streams admitted (being set up or open). */
    get openStreams() {
      return admission.admitted;
    },
    closeAll() {
      for (const f of [...open]) f();
    },
  };
}
