/**
 * Everything that reaches a CallActor goes through its mailbox as one of these (one
 * actor per call: a FIFO mailbox processed to completion). Results of a turn's async work carry the turn number; results of a superseded turn are dropped.
 */
import type { AsrEvent } from '../../shared/providers/types.js';

/** A run's messages (defined beside the turn runner, in shared/agent). */
export type { TurnMsg } from '../../shared/agent/turn-runner.js';
import type { TurnMsg } from '../../shared/agent/turn-runner.js';

export type CallMsg =
  | { kind: 'asr'; event: AsrEvent }
  | { kind: 'asr_closed'; error?: string }
  /** `runId` identifies the agent run that produced it; stale runs are dropped. */
  | { kind: 'turn'; runId: number; msg: TurnMsg }
  | { kind: 'timer'; name: 'barge_confirm' | 'idle' | 'endpoint' | 'hangup' | 'credit' | 'dtmf' }
  | { kind: 'playback_done' }
  /** `admitted`: already passed `CallActor.injectText()` (rate limit charged); absent: admitted on arrival. */
  | { kind: 'text_inject'; text: string; role: 'user' | 'system'; admitted?: boolean }
  /** A client frame the call cannot take (a malformed `text_inject`, an oversized frame): answered with a non-fatal error. */
  | { kind: 'client_invalid'; message: string }
  /** `close`: the socket's close code and text when they are not 1000 and `reason` (a stream we refuse). */
  | { kind: 'end'; reason: string; close?: { code: number; text: string } }
  | { kind: 'transport_closed' }
  | { kind: 'mark'; name: string }
  /** A key the caller pressed on a carrier call (one of 0-9, *, #, A-D). */
  | { kind: 'dtmf'; digit: string };
