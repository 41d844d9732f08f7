/**
 * The engine-side conversation writer: every call's recorder callbacks (start, each turn, end)
 * become durable rows without the call ever waiting on Postgres.
 *
 * - `recorderFor(sessionConfig)` returns the call's `CallRecorder`; its methods only build rows
 *   and push them on this node's queue (synchronous, no I/O).
 * - A flusher writes the queue head in batches (multi-row inserts, one transaction per batch)
 *   every `flushMs`, or at once when `batchSize` operations are waiting.
 * - Ids are chosen here (UUID v7) before the first attempt, so retries are idempotent.
 * - Postgres down: the same batch is retried with capped exponential backoff while the queue
 *   keeps accepting up to its bound. Data errors (SQLSTATE 22/23) never block the queue: the batch
 *   is written op by op and the rejected op is dropped with an error log (`rejected` in stats).
 *
 * QUEUE BOUND AND OVERFLOW POLICY (every queue has a bound and an overflow policy written next to it): at most `maxQueue` operations. When a
 * turn does not fit, the whole turn is REFUSED (never a silent drop, never an older record
 * evicted): `refusedTurns`/`refusedOps` are counted and an error line `records queue full` is
 * logged (at most every 5 s, with totals). A call's start and end may use a reserve of 10% above
 * the bound, so conversation rows and their final state survive a full queue; beyond that they
 * are refused the same loud way. Audio is refused separately by the audio store (its own bound).
 */
import { backoffDelayMs } from '../../shared/backoff.js';
import type { TimerHandle } from '../../shared/clock.js';
import { isUuid, newId } from '../../shared/ids.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { AgentMessageRecord, CallEndRecord, TurnRecord } from '../session/recorder.js';
import { describeOp, isRetryable, type RecordOp, writeBatch, writeOne } from './batch-sql.js';
import type { TranscriptEvent } from '../../shared/records/bus.js';
import type { ConversationRecordRow } from '../../shared/records/rows.js';
import { pipelineEventRows } from './pipeline-events.js';
import { agentMessageRow, conversationEndRow, conversationStartRow, messageEventJson, type StartInfo, toolCallEventJson, turnRows } from './rows.js';
import { type ConversationRecorder, type ConversationWriter, type ConversationWriterOptions, type NewOp, WriterClosedError, type WriterStats } from './writer-types.js';

// The public shapes live in writer-types.ts; re-exported so callers keep importing from here.
export { WriterClosedError } from './writer-types.js';
export type { ConversationRecorder, ConversationWriter, ConversationWriterOptions, WriterStats } from './writer-types.js';

const REFUSAL_LOG_EVERY_MS = 5000;
/** A batch in flight longer than this turns the periodic line into a warning. */
const STALL_WARN_MS = 30_000;
/** Live stream events waiting to be published; oldest dropped beyond this (the database is the record). */
const MAX_PENDING_EVENTS = 1000;

export function createConversationWriter(opts: ConversationWriterOptions): ConversationWriter {
  const { sql, logger, clock, audio, bus } = opts;
  const maxQueue = opts.maxQueue ?? 10_000;
  const reserve = Math.max(10, Math.floor(maxQueue / 10));
  const batchSize = opts.batchSize ?? 200;
  const flushMs = opts.flushMs ?? 100;
  const retryBaseMs = opts.retryBaseMs ?? 100;
  const retryMaxMs = opts.retryMaxMs ?? 5000;
  const closeTimeoutMs = opts.closeTimeoutMs ?? 10_000;

  const queue: RecordOp[] = [];
  let seq = 0;
  let writtenSeq = 0;
  let waiters: Array<{ target: number; resolve: () => void; reject: (e: Error) => void }> = [];
  let draining: Promise<void> | undefined;
  let backoff: TimerHandle | undefined;
  let attempt = 0;
  /** When the current run of failed writes began (0: the last write landed). */
  let failingSinceMs = 0;
  let closed = false;
  /** When the batch in flight started (0: none), so a write that hangs is visible. */
  let batchStartedMs = 0;
  const s = { written: 0, batches: 0, retries: 0, refusedTurns: 0, refusedOps: 0, rejected: 0, audioRefused: 0, lastError: undefined as string | undefined };
  let lastRefusalLogMs = 0;
  let refusedSinceLog = 0;
  let lastLogged = '';
  const events: TranscriptEvent[] = [];
  let eventsScheduled = false;

  const tick = clock.setInterval(() => kick(), flushMs);
  const statsTimer = clock.setInterval(() => logStats(), opts.statsLogMs ?? 30_000);

  function enqueue(ops: NewOp[], limit: number): boolean {
    if (closed || queue.length + ops.length > limit) return false;
    for (const op of ops) queue.push({ ...op, seq: ++seq } as RecordOp);
    if (queue.length >= batchSize) kick();
    return true;
  }

  function refuse(what: string, ops: number, ctx: Record<string, unknown>): void {
    s.refusedOps += ops;
    refusedSinceLog += ops;
    const now = clock.now();
    if (now - lastRefusalLogMs >= REFUSAL_LOG_EVERY_MS) {
      lastRefusalLogMs = now;
      logger.error(
        { what, ...ctx, queued: queue.length, maxQueue, closed, refusedOps: s.refusedOps, refusedTurns: s.refusedTurns, refusedSinceLastLog: refusedSinceLog },
        closed ? 'records queue closed: refusing conversation records' : 'records queue full: refusing conversation records',
      );
      refusedSinceLog = 0;
    }
  }

  function publish(ev: TranscriptEvent): void {
    if (!bus) return;
    if (events.length >= MAX_PENDING_EVENTS) events.shift();
    events.push(ev);
    if (eventsScheduled) return;
    eventsScheduled = true;
    // Off the actor's call stack: the recorder callbacks only enqueue.
    setImmediate(() => {
      eventsScheduled = false;
      for (const e of events.splice(0)) bus.publish(e);
    });
  }

  // ------------------------------------------------------------ flushing

  function kick(): void {
    if (draining || backoff || queue.length === 0) return;
    draining = drain().finally(() => {
      draining = undefined;
    });
  }

  async function drain(): Promise<void> {
    while (queue.length > 0) {
      const batch = queue.slice(0, batchSize);
      batchStartedMs = clock.now();
      try {
        const r = await writeBatch(sql, batch);
        s.written += r.rows;
        s.batches++;
      } catch (err) {
        batchStartedMs = 0;
        if (isRetryable(err)) return scheduleRetry(err, batch.length);
        // A row the database refuses: isolate it so the rest of the batch still lands.
        const ok = await isolate(batch);
        if (!ok) return;
      }
      batchStartedMs = 0;
      queue.splice(0, batch.length);
      attempt = 0;
      failingSinceMs = 0;
      markWritten(batch[batch.length - 1].seq);
    }
  }

  /** Writes a rejected batch op by op; false when a retryable error interrupted it (retry later). */
  async function isolate(batch: RecordOp[]): Promise<boolean> {
    for (const op of batch) {
      try {
        await writeOne(sql, op);
        s.written++;
      } catch (err) {
        if (isRetryable(err)) {
          scheduleRetry(err, batch.length);
          return false;
        }
        s.rejected++;
        logger.error({ err, code: (err as { code?: string }).code, op: describeOp(op) }, 'conversation record rejected by the database');
      }
    }
    s.batches++;
    return true;
  }

  function scheduleRetry(err: unknown, batchOps: number): void {
    attempt++;
    if (!failingSinceMs) failingSinceMs = clock.now();
    s.retries++;
    const e = err as { message?: string; code?: string };
    s.lastError = `${e.code ?? 'ERROR'}: ${e.message ?? String(err)}`;
    // Full jitter: every engine node's writer saw the same outage; they must not retry in step.
    const delayMs = backoffDelayMs(attempt, { baseMs: retryBaseMs, maxMs: retryMaxMs, random: opts.random });
    logger.warn({ attempt, delayMs, batchOps, queued: queue.length, err }, 'records write failed; retrying');
    backoff = clock.setTimeout(() => {
      backoff = undefined;
      kick();
    }, delayMs);
  }

  function markWritten(upTo: number): void {
    writtenSeq = upTo;
    if (!waiters.length) return;
    const still: typeof waiters = [];
    for (const w of waiters) (w.target <= writtenSeq ? w.resolve() : still.push(w));
    waiters = still;
  }

  function logStats(): void {
    const st = stats();
    const line = JSON.stringify([st.queued, st.written, st.retries, st.refusedOps, st.rejected, st.audio?.written]);
    if (line === lastLogged && st.queued === 0) return; // nothing happened since the last line
    lastLogged = line;
    const level = st.backingOff || st.refusedOps > 0 || st.writeInFlightMs > STALL_WARN_MS ? 'warn' : 'info';
    logger[level](st, st.writeInFlightMs > STALL_WARN_MS ? 'records queue (write stalled)' : 'records queue');
  }

  function stats(): WriterStats {
    return {
      queued: queue.length,
      ...s,
      backingOff: backoff !== undefined,
      writeInFlightMs: batchStartedMs ? clock.now() - batchStartedMs : 0,
      audio: audio?.stats(),
    };
  }

  // ------------------------------------------------------------ recorders

  function recorderFor(config: SessionConfig, nodeId?: string): ConversationRecorder {
    const conversationId = newId();
    let startRow: ConversationRecordRow | undefined;
    let startQueued = false;
    let ended = false;
    const valid = isUuid(config.agent_id) && isUuid(config.workspace_id) && (!config.call_id || isUuid(config.call_id));
    if (!valid) logger.error({ agentId: config.agent_id, workspaceId: config.workspace_id }, 'session has non-UUID agent/workspace/call id: call not recorded');
    const ctx = () => ({ conversationId });

    return {
      conversationId,
      keepsAgentAudio: audio !== undefined,
      start(info: StartInfo) {
        if (!valid || startRow) return;
        startRow = conversationStartRow(conversationId, { ...info, call_id: info.call_id ?? config.call_id, engine_node_id: nodeId }, clock.now());
        startQueued = enqueue([{ kind: 'start', row: startRow }], maxQueue + reserve);
        if (!startQueued) refuse('start', 1, ctx());
        publish({ type: 'start', conversation_id: conversationId, session_id: info.session_id, agent_id: info.agent_id, started_at: startRow.started_at.toISOString() });
      },
      turn(rec: TurnRecord) {
        if (!valid || ended) return;
        const rows = turnRows(conversationId, rec);
        const ops: NewOp[] = [
          { kind: 'message', row: rows.user },
          ...(rec.unanswered ? [] : [{ kind: 'message' as const, row: rows.assistant }]),
          ...rows.toolCalls.map((row) => ({ kind: 'tool_call' as const, row })),
          // Pipeline analytics (docs/analytics.md): one op per turn, same queue and batch as the
          // turn's messages (so the same overflow policy), never awaited here.
          ...(startRow ? [{ kind: 'pipeline_events' as const, rows: pipelineEventRows({ conversationId, agentId: startRow.agent_id, workspaceId: startRow.workspace_id }, rec) }] : []),
        ];
        // Without its conversation row a turn cannot be stored (foreign key): refused, loudly.
        if (!startQueued || !enqueue(ops, maxQueue)) {
          s.refusedTurns++;
          refuse('turn', ops.length, { ...ctx(), turn: rec.turn });
          return;
        }
        if (audio) {
          if (rec.user_audio?.length) saveAudio(rows.user.id, rec.user_audio, rec.user_audio_rate_hz ?? 16000, rec.started_at_ms);
          if (rec.agent_audio?.samples.length) saveAudio(rows.assistant.id, rec.agent_audio.samples, rec.agent_audio.sampleRateHz, rec.started_at_ms);
        }
        publish({
          type: 'turn',
          conversation_id: conversationId,
          session_id: config.session_id,
          turn_number: rec.turn,
          messages: rec.unanswered ? [messageEventJson(rows.user)] : [messageEventJson(rows.user), messageEventJson(rows.assistant)],
          tool_calls: rows.toolCalls.map(toolCallEventJson),
        });
      },
      agentMessage(rec: AgentMessageRecord) {
        if (!valid || ended) return;
        const row = agentMessageRow(conversationId, rec);
        // Same queue and overflow policy as a turn's messages.
        if (!startQueued || !enqueue([{ kind: 'message', row }], maxQueue)) {
          refuse('agent_message', 1, { ...ctx(), turn: rec.turn });
          return;
        }
        if (audio && rec.agent_audio?.samples.length) saveAudio(row.id, rec.agent_audio.samples, rec.agent_audio.sampleRateHz, rec.started_at_ms);
        publish({ type: 'turn', conversation_id: conversationId, session_id: config.session_id, turn_number: rec.turn, messages: [messageEventJson(row)], tool_calls: [] });
      },
      end(rec: CallEndRecord) {
        if (!valid || ended) return;
        ended = true;
        // No start seen (should not happen): the upsert still creates the row from the session.
        const base =
          startRow ??
          conversationStartRow(
            conversationId,
            { session_id: config.session_id, agent_id: config.agent_id, user_id: config.user_id, workspace_id: config.workspace_id, call_id: config.call_id, metadata: {}, started_at_ms: rec.ended_at_ms - rec.total_duration_ms, engine_node_id: nodeId },
            clock.now(),
          );
        const row = conversationEndRow(base, rec);
        if (!enqueue([{ kind: 'end', row }], maxQueue + reserve)) refuse('end', 1, ctx());
        publish({
          type: 'end',
          conversation_id: conversationId,
          session_id: config.session_id,
          status: rec.status,
          reason: rec.reason,
          total_turns: row.total_turns,
          total_duration_ms: row.total_duration_ms,
          avg_response_latency_ms: row.avg_response_latency_ms,
          ended_at: row.ended_at!.toISOString(),
        });
      },
    };
  }

  function saveAudio(messageId: string, samples: Int16Array, sampleRateHz: number, atMs: number): void {
    const accepted = audio!.save({ messageId, samples, sampleRateHz, atMs }, (relPath) => {
      if (!relPath) return;
      // The file exists; point the message at it (after the message insert: FIFO order).
      if (!enqueue([{ kind: 'audio', messageId, path: relPath }], maxQueue + reserve)) refuse('audio_path', 1, { messageId });
    });
    if (!accepted) {
      s.audioRefused++;
      logger.warn({ messageId, audio: audio!.stats() }, 'turn audio refused (audio queue full or closed)');
    }
  }

  async function flush(): Promise<void> {
    if (audio) await audio.idle();
    const target = seq;
    if (writtenSeq >= target) return;
    // After close nothing drains any more: fail instead of waiting forever.
    if (closeDone) throw new WriterClosedError();
    kick();
    await new Promise<void>((resolve, reject) => waiters.push({ target, resolve, reject }));
  }

  let closing: Promise<void> | undefined;
  let closeDone = false;
  async function close(): Promise<void> {
    if (closing) return closing;
    closing = (async () => {
      clock.clearInterval(tick);
      clock.clearInterval(statsTimer);
      await audio?.close();
      closed = true;
      let deadlineTimer: TimerHandle | undefined;
      const deadline = new Promise<'timeout'>((resolve) => (deadlineTimer = clock.setTimeout(() => resolve('timeout'), closeTimeoutMs)));
      const done = await Promise.race([flushAll().catch(() => 'closed' as const), deadline]);
      clock.clearTimeout(deadlineTimer);
      if (done !== 'done' || queue.length > 0) {
        logger.error({ unwritten: queue.length, stats: stats() }, 'conversation writer closed with records unwritten');
      }
      if (backoff) clock.clearTimeout(backoff);
      backoff = undefined;
      for (const w of waiters) w.reject(new WriterClosedError());
      waiters = [];
      closeDone = true;
      logStats();
    })();
    return closing;
  }

  async function flushAll(): Promise<'done'> {
    const target = seq;
    if (writtenSeq < target) {
      kick();
      await new Promise<void>((resolve, reject) => waiters.push({ target, resolve, reject }));
    }
    return 'done';
  }

  return {
    recorderFor,
    queued: () => queue.length,
    failingForMs: () => (failingSinceMs ? clock.now() - failingSinceMs : 0),
    flush,
    close,
    stats,
    get closed() {
      return closed;
    },
  };
}
