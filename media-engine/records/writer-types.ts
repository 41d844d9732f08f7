/**
 * The conversation writer's public shapes: its options, stats, the per-call recorder it hands
 * out and the error its promises reject with after close. Kept apart from writer.ts so the
 * queue/flush logic there stays readable on its own, and so callers that only need the types
 * (records/index.ts, tests) do not read through the implementation.
 */
import type { Logger } from '../../shared/logger.js';
import type { Clock } from '../../shared/clock.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { CallRecorder } from '../session/recorder.js';
import type { AudioStore } from './audio-store.js';
import type { RecordOp, Sql } from './batch-sql.js';
import type { TranscriptBus } from '../../shared/records/bus.js';

export interface ConversationWriterOptions {
  sql: Sql;
  logger: Logger;
  clock: Clock;
  /** Operations queued on this node before turns are refused. Default 10 000. */
  maxQueue?: number;
  /** Operations per transaction. Default 200. */
  batchSize?: number;
  /** Longest a record waits before a flush. Default 100 ms. */
  flushMs?: number;
  /** Per-turn audio (Ogg/Opus files). Default: none kept. Owned: `close()` finishes and closes it. */
  audio?: AudioStore;
  /** Live transcript events for SSE clients. Default: none published. Not owned (shared with the control plane; the caller closes it). */
  bus?: TranscriptBus;
  /** Ceiling of the first retry delay; doubles per failed attempt, full jitter (shared/backoff.ts). Default 100 ms. */
  retryBaseMs?: number;
  /** Retry delay cap. Default 5000 ms. */
  retryMaxMs?: number;
  /** Jitter draw in [0, 1). Default Math.random. */
  random?: () => number;
  /** Period of the `records queue` log line. Default 30 000 ms. */
  statsLogMs?: number;
  /** How long `close()` keeps trying to write what is queued. Default 10 000 ms. */
  closeTimeoutMs?: number;
}

export interface WriterStats {
  queued: number;
  /** Rows written (inserts and updates). */
  written: number;
  batches: number;
  /** Failed batch attempts that were retried. */
  retries: number;
  refusedTurns: number;
  refusedOps: number;
  /** Operations the database rejected as invalid (logged with their ids). */
  rejected: number;
  audioRefused: number;
  backingOff: boolean;
  /** How long the batch being written has been in flight (0: none). A database that accepts connections but never answers shows here. */
  writeInFlightMs: number;
  lastError?: string;
  audio?: ReturnType<AudioStore['stats']>;
}

export interface ConversationRecorder extends CallRecorder {
  /** The conversation row id (chosen when the recorder is created). */
  readonly conversationId: string;
}

export interface ConversationWriter {
  /** `nodeId`: the engine node running the call, stored on the conversation (node-loss sweeper). */
  recorderFor(config: SessionConfig, nodeId?: string): ConversationRecorder;
  queued(): number;
  /** How long writes have been failing without one landing (0: the last one landed): the node's readiness. */
  failingForMs(): number;
  /** Resolves when everything queued before the call (including pending audio) is written. Retries while Postgres is down. */
  flush(): Promise<void>;
  /** Stops accepting, writes what it can within `closeTimeoutMs`, logs anything left. Idempotent. */
  close(): Promise<void>;
  stats(): WriterStats;
  readonly closed: boolean;
}

export class WriterClosedError extends Error {
  constructor() {
    super('conversation writer closed');
    this.name = 'WriterClosedError';
  }
}

/** An operation before it gets its queue sequence number. */
export type NewOp = RecordOp extends infer T ? (T extends RecordOp ? Omit<T, 'seq'> : never) : never;
