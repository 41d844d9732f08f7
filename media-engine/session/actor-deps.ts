/**
 * What a CallActor is built from: its dependencies (everything it talks to is injected, so unit
 * tests run it on a simulated clock with in-memory fakes) and its timing knobs.
 */
import type { Clock } from '../../shared/clock.js';
import type { Logger } from '../../shared/logger.js';
import type { OutboundClient } from '../../shared/outbound/index.js';
import type { SessionConfig } from '../../shared/voice/session-config.js';
import type { VadProfile } from '../audio/vad.js';
import type { AsrProvider, AsrStream, LlmProvider, TtsProvider } from '../../shared/providers/types.js';
import type { AmdSettings } from '../../shared/voice/amd.js';
import type { CallTelemetry } from '../../shared/observability/call-telemetry.js';
import type { CallRecorder } from './recorder.js';
import type { KnowledgeSearch } from '../knowledge/search.js';
import type { CallTransport } from './transport.js';
import type { CallConnectors } from './connector-tools.js';

export type Phase = 'listening' | 'user_speaking' | 'thinking' | 'speaking';

export interface CallActorDeps {
  config: SessionConfig;
  transport: CallTransport;
  providers: { asr: AsrProvider; llm: LlmProvider; tts: TtsProvider };
  /** An ASR stream opened ahead of time (pre-warm); else one is opened at start. */
  asrStream?: AsrStream;
  profile: VadProfile;
  clock: Clock;
  logger: Logger;
  recorder?: CallRecorder;
  /** Tenant URLs (HTTP tools) go through it (shared/outbound). Absent: tool calls are refused. */
  outbound?: OutboundClient;
  /** Runs connector tools (`connector-tools.ts`). Absent: their calls are error results. */
  connectors?: CallConnectors;
  /** Answers the `search_knowledge` function (issue 19). Absent: calls get no knowledge search. */
  knowledge?: KnowledgeSearch;
  /** Called once when the call is over (after `call_ended`, socket closing). */
  onClosed?: (reason: string) => void;
  /**
   * Inbound audio format pushed to ASR: raw mu-law 8 kHz (carrier, when the ASR takes it) or PCM;
   * absent: PCM at the transport's `inRateHz`. A PCM rate other than `inRateHz` is resampled.
   */
  asrInput?: { encoding: 'linear16' | 'mulaw'; sampleRateHz: number };
  /** Answering-machine policy of an outbound carrier call (`amd.ts`); absent: no detection. */
  amd?: AmdSettings;
  /** Metrics and traces of the call, fed at turn boundaries only (shared/observability). */
  telemetry?: CallTelemetry;
  /** Transport counters (carrier jitter buffer) copied into each turn record's metadata. */
  transportStats?: () => unknown;
  /**
   * Call time the workspace's credit covers (BILLING_ENABLED; docs/billing.md). Once spent, the
   * next turn boundary speaks `credit.ts`'s notice and ends the call. Absent: no limit.
   */
  allowanceMs?: number;
  /**
   * Asks the control plane to hand this carrier call to a portal agent (`config.human_handoff`;
   * issue 21). The call goes on until the person accepts (the AI then drops off) or nobody is free
   * (a fallback is spoken). Absent: no `transfer_to_human`, and a flow `transfer` node ends the call.
   */
  requestHandoff?: () => void;
}

export interface ActorTuning {
  /** Silence after speech that ends a caller turn once text is final. Default 500 ms. */
  endpointSilenceMs: number;
  /** Unconfirmed barge-in gives up after this. Default 2000 ms. */
  bargeConfirmMs: number;
  /** Longest the goodbye may play before hanging up. Default 8000 ms. */
  hangupGraceMs: number;
  /** After a final message on a carrier call, wait this long for its mark (heard) before hanging up anyway. Default 3000 ms. */
  markGraceMs: number;
}

export const DEFAULT_TUNING: ActorTuning = { endpointSilenceMs: 500, bargeConfirmMs: 2000, hangupGraceMs: 8000, markGraceMs: 3000 };
