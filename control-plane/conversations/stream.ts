/**
 * Live transcript of one conversation as server-sent events:
 * `GET /api/v1/conversations/{id}/stream` (bearer required; another workspace's id is 404).
 *
 * Events (each `data` is one JSON line):
 * - `conversation`: the conversation as `GET /conversations/{id}` returns it (first event);
 * - `turn` (SSE `id` = turn number): `{conversation_id, turn_number, messages, tool_calls}`, first
 *   the turns already stored (replay, messages carry `audio_url`), then live turns as the engine's
 *   writer publishes them (same record shape, `audio_url` null); a message is never sent twice, and
 *   the agent's own prompts (welcome, nudges, goodbye) come as turns of one assistant message;
 * - `end`: `{conversation_id, status, total_turns, total_duration_ms, avg_response_latency_ms,
 *   ended_at}`, then the server closes the stream. A conversation that already ended gets its
 *   replay and `end` at once.
 * A `: heartbeat` comment every 15 s keeps proxies from closing the stream; at each heartbeat the
 * stored status is re-checked, so an `end` missed on the bus still closes the stream.
 *
 * Bounds: `maxStreams` concurrent streams per control plane (beyond: 503), `maxStreamsPerUser` per
 * user (beyond: 429), both counted from authentication on; per client at most
 * `maxBufferedEvents` events waiting on a slow socket (beyond: the stream is closed; the client
 * reconnects and replays from the database).
 */
import type { ServerResponse } from 'node:http';
import type { MessageRow, ToolCallRow } from '../../shared/records/rows.js';
import type { Clock, TimerHandle } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import { notFound } from '../../shared/errors.js';
import { ConversationMessageSchema, ConversationSchema, ConversationService, ToolCallRecordSchema } from '../../shared/gen/voiceplane/v1/conversations_pb.js';
import type { TranscriptBus, TranscriptEvent, TranscriptMessage } from '../../shared/records/bus.js';
import type { Auth } from '../http/auth.js';
import type { Sql } from '../../shared/db/client.js';
import type { NodeReq, NodeRes } from '../http/rest.js';
import type { AudioLinks } from './audio-links.js';
import { rawHandlerContext, sendError, streamAdmission } from './http-util.js';
import { type ConversationRow, getConversation, listMessages, listToolCalls } from './store.js';
import { isPlainObject, pathId } from '../http/validate.js';
import { conversationView, messageView, toolCallView } from './views.js';
import { rawRoute, requestUrl } from '../http/request-url.js';
import { writeJson } from '../http/json-writer.js';

export interface StreamOptions {
  sql: Sql;
  auth: Auth;
  bus: TranscriptBus;
  links: AudioLinks;
  clock: Clock;
  logger: Logger;
  /** Default 15 000 ms. */
  heartbeatMs?: number;
  /** Default 256 events per client. */
  maxBufferedEvents?: number;
  /** Default 1000 streams per control plane. */
  maxStreams?: number;
  /** Streams one user (or API key's user) may hold at once (beyond: 429). Default 100. */
  maxStreamsPerUser?: number;
}

const STREAM_PATH = /^\/api\/v1\/conversations\/([^/]+)\/stream\/?$/;

export function createStreamHandler(opts: StreamOptions) {
  const heartbeatMs = opts.heartbeatMs ?? 15_000;
  const maxBuffered = opts.maxBufferedEvents ?? 256;
  const maxStreams = opts.maxStreams ?? 1000;
  const getMethod = ConversationService.method.getConversation;
  const maxPerUser = opts.maxStreamsPerUser ?? 100;
  const open = new Set<() => void>();
  const admission = streamAdmission('transcript', maxStreams, maxPerUser);

  const handler = rawRoute((req, url) => req.method === 'GET' && STREAM_PATH.test(url.pathname), async (req, res) => {
    const m = STREAM_PATH.exec(requestUrl(req).pathname)!;
    const ac = new AbortController();
    res.once('close', () => ac.abort());
    let release: (() => void) | undefined;
    try {
      const ctx = rawHandlerContext(req, ConversationService, getMethod, ac.signal);
      const p = await opts.auth.principal(ctx);
      // Counted before the next await: a burst of requests cannot all pass the check together.
      release = admission.admit(p.userId);
      const ws = await opts.auth.workspaceIds(p);
      const conv = await getConversation(opts.sql, ws, pathId('conversation', m[1]));
      if (!conv) throw notFound('conversation');
      await serve(req, res, conv, ac.signal, release);
    } catch (err) {
      release?.();
      sendError(res, err, opts.logger);
    }
    return true;
  });

  async function serve(req: NodeReq, anyRes: NodeRes, conv: ConversationRow, signal: AbortSignal, release: () => void): Promise<void> {
    // HTTP/1 and HTTP/2 compat responses share this surface; the union's overloads are not callable.
    const res = anyRes as ServerResponse;
    const id = conv.id;
    const headers: Record<string, string> = { 'content-type': 'text/event-stream; charset=utf-8', 'cache-control': 'no-cache, no-transform', 'x-accel-buffering': 'no' };
    if (req.httpVersionMajor === 1) headers.connection = 'keep-alive';
    let finished = false;
    // Messages already sent, by id: a turn number is not enough (the welcome, idle nudges and the
    // goodbye all come after the turn they follow, under its number), and a message is never sent twice.
    const sentMessages = new Set<string>();
    let replaying = true;
    const early: TranscriptEvent[] = [];
    const pending: string[] = [];
    let blocked = false;
    let heartbeat: TimerHandle | undefined;
    let unsubscribe: (() => Promise<void>) | undefined;

    const finish = (destroy = false) => {
      if (finished) return;
      finished = true;
      open.delete(finish);
      release();
      opts.clock.clearInterval(heartbeat);
      void unsubscribe?.().catch(() => {});
      if (destroy) res.destroy();
      else res.end();
    };
    signal.addEventListener('abort', () => finish(), { once: true });

    const write = (chunk: string) => {
      if (finished) return;
      if (blocked) {
        if (pending.length >= maxBuffered) {
          opts.logger.warn({ conversationId: id, buffered: pending.length }, 'transcript stream client too slow: closing');
          return finish(true);
        }
        pending.push(chunk);
        return;
      }
      if (!res.write(chunk)) {
        blocked = true;
        res.once('drain', onDrain);
      }
    };
    const onDrain = () => {
      blocked = false;
      while (pending.length && !blocked && !finished) {
        if (!res.write(pending.shift()!)) {
          blocked = true;
          res.once('drain', onDrain);
        }
      }
    };
    const send = (event: string, data: unknown, eventId?: number) =>
      write(`event: ${event}\n${eventId !== undefined ? `id: ${eventId}\n` : ''}data: ${JSON.stringify(data)}\n\n`);

    const deliver = (ev: TranscriptEvent) => {
      if (ev.type === 'turn') {
        const fresh = ev.messages.filter((msg) => typeof msg.id === 'string' && !sentMessages.has(msg.id));
        if (!fresh.length) return;
        const ids = new Set(fresh.map((msg) => msg.id));
        for (const mid of ids) sentMessages.add(mid);
        // Live turns go through the same views as replayed ones: every field present, unset ones null.
        const messages = fresh.map((msg) => writeJson(ConversationMessageSchema, messageView(liveMessageRow(msg), opts.links)));
        const toolCalls = ev.tool_calls.filter((tc) => ids.has(String(tc.message_id))).map((tc) => writeJson(ToolCallRecordSchema, toolCallView(liveToolCallRow(tc))));
        send('turn', { conversation_id: id, turn_number: ev.turn_number, messages, tool_calls: toolCalls }, ev.turn_number);
      } else if (ev.type === 'end') {
        send('end', endPayload(id, ev));
        finish();
      }
    };

    /** A bus listener that throws would be an uncaught exception (the memory bus runs it on its own tick). */
    const safeDeliver = (ev: TranscriptEvent) => {
      try {
        deliver(ev);
      } catch (err) {
        opts.logger.warn({ err, conversationId: id }, 'live transcript event could not be sent: closing the stream (the client replays on reconnect)');
        finish(true);
      }
    };

    /** Stored messages not sent yet, by turn (with their tool calls). */
    const replayStored = async () => {
      const [messages, toolCalls] = await Promise.all([listMessages(opts.sql, id), listToolCalls(opts.sql, id)]);
      const byTurn = new Map<number, { messages: unknown[]; tool_calls: unknown[] }>();
      const messageTurn = new Map<string, number>();
      for (const msg of messages) {
        if (sentMessages.has(msg.id)) continue;
        sentMessages.add(msg.id);
        let t = byTurn.get(msg.turn_number);
        if (!t) byTurn.set(msg.turn_number, (t = { messages: [], tool_calls: [] }));
        t.messages.push(writeJson(ConversationMessageSchema, messageView(msg, opts.links)));
        messageTurn.set(msg.id, msg.turn_number);
      }
      for (const tc of toolCalls) {
        const turn = messageTurn.get(tc.message_id);
        if (turn !== undefined) byTurn.get(turn)!.tool_calls.push(writeJson(ToolCallRecordSchema, toolCallView(tc)));
      }
      for (const [turn, t] of [...byTurn.entries()].sort((a, b) => a[0] - b[0])) {
        send('turn', { conversation_id: id, turn_number: turn, ...t }, turn);
      }
    };

    const endFromRow = (row: ConversationRow) => {
      send('end', {
        conversation_id: id,
        status: row.status,
        total_turns: row.total_turns,
        total_duration_ms: Number(row.total_duration_ms),
        avg_response_latency_ms: row.avg_response_latency_ms,
        ended_at: row.ended_at?.toISOString() ?? null,
      });
      finish();
    };

    // Subscribe before reading the stored turns, so nothing falls between replay and live; and
    // before the 200, so a bus that is down (Redis outage) answers 503 instead of a stream that
    // would never carry a live turn (issue 11).
    unsubscribe = await opts.bus.subscribe(id, (ev) => {
      if (finished) return;
      if (replaying) {
        if (early.length < maxBuffered) early.push(ev);
        return;
      }
      safeDeliver(ev);
    });
    if (finished || signal.aborted || res.destroyed) {
      finished = true;
      release();
      return void unsubscribe().catch(() => {});
    }
    res.writeHead(200, headers);
    // HTTP/1 only (HTTP/2 sends the headers with writeHead's first frame anyway).
    if (typeof res.flushHeaders === 'function') res.flushHeaders();
    open.add(finish);
    send('conversation', writeJson(ConversationSchema, conversationView(conv)));
    await replayStored();
    replaying = false;
    if (conv.status !== 'active') return endFromRow(conv);
    for (const ev of early.splice(0)) if (!finished) safeDeliver(ev);

    heartbeat = opts.clock.setInterval(() => {
      write(': heartbeat\n\n');
      // An `end` published while no one listened (or lost on the bus) still ends the stream.
      void getConversation(opts.sql, [conv.workspace_id], id)
        .then(async (row) => {
          if (finished || !row || row.status === 'active') return;
          await replayStored();
          endFromRow(row);
        })
        .catch(() => {});
    }, heartbeatMs);
  }

  return {
    handler,
    /** Open streams (for tests and shutdown). */
    get openStreams() {
      return open.size;
    },
    /** Ends every open stream (shutdown). */
    closeAll() {
      for (const f of [...open]) f();
    },
  };
}

function endPayload(id: string, ev: Extract<TranscriptEvent, { type: 'end' }>) {
  return {
    conversation_id: id,
    status: ev.status,
    total_turns: ev.total_turns,
    total_duration_ms: ev.total_duration_ms,
    avg_response_latency_ms: ev.avg_response_latency_ms,
    ended_at: ev.ended_at,
  };
}

/**
 * A live message as the row it was written from. The engine publishes the row's fields (dates as
 * ISO strings, null fields left out, no audio yet); anything missing is read as unset.
 */
function liveMessageRow(m: TranscriptMessage): MessageRow {
  const f = m as Record<string, unknown>;
  const text = (k: string) => (typeof f[k] === 'string' ? (f[k] as string) : null);
  const num = (k: string) => (typeof f[k] === 'number' ? (f[k] as number) : null);
  return {
    id: m.id,
    conversation_id: m.conversation_id,
    turn_number: m.turn_number,
    role: m.role,
    content: m.content,
    tool_calls: Array.isArray(m.tool_calls) ? m.tool_calls : [],
    tool_call_id: text('tool_call_id'),
    reasoning_content: text('reasoning_content'),
    audio_path: null,
    asr_provider: text('asr_provider'),
    asr_model: text('asr_model'),
    asr_latency_ms: num('asr_latency_ms'),
    asr_confidence: num('asr_confidence'),
    llm_provider: text('llm_provider'),
    llm_model: text('llm_model'),
    llm_latency_ms: num('llm_latency_ms'),
    tokens_input: num('tokens_input'),
    tokens_output: num('tokens_output'),
    tts_provider: text('tts_provider'),
    tts_latency_ms: num('tts_latency_ms'),
    total_latency_ms: num('total_latency_ms'),
    internal_overhead_ms: num('internal_overhead_ms'),
    metadata: isPlainObject(f.metadata) ? f.metadata : {},
    billable: f.billable === true,
    created_at: liveDate(f.created_at),
  };
}

function liveToolCallRow(c: Record<string, unknown>): ToolCallRow {
  return {
    id: String(c.id ?? ''),
    message_id: String(c.message_id ?? ''),
    conversation_id: String(c.conversation_id ?? ''),
    tool_name: String(c.tool_name ?? ''),
    tool_input: c.tool_input ?? {},
    tool_output: c.tool_output ?? null,
    status: String(c.status ?? ''),
    latency_ms: typeof c.latency_ms === 'number' ? c.latency_ms : 0,
    error_message: typeof c.error_message === 'string' ? c.error_message : null,
    billable: c.billable === true,
    created_at: liveDate(c.created_at),
  };
}

function liveDate(v: unknown): Date {
  const d = typeof v === 'string' || typeof v === 'number' ? new Date(v) : new Date(NaN);
  return Number.isNaN(d.getTime()) ? new Date() : d;
}
