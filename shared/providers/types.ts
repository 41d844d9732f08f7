/**
 * Provider interfaces: small, with declared capabilities. Adapters never read env: credentials and settings come
 * in through their factory options. Every stream is cancellable: `close()` is idempotent and aborts
 * vendor work (sockets closed, requests aborted) so barge-in never leaves orphans behind.
 */

/** PCM audio is 16-bit signed little-endian mono; the sample rate travels with it. */
export interface PcmChunk {
  samples: Int16Array;
  sampleRateHz: number;
}

// ---------------------------------------------------------------- ASR
export type AsrEvent =
  | { type: 'speech_started'; atMs: number }
  /** A partial hypothesis for the segment in progress; replaces the previous interim. */
  | { type: 'interim'; text: string; confidence?: number }
  /** A segment's text is fixed; `endOfTurn` marks the vendor's end-of-utterance signal. */
  | { type: 'final'; text: string; confidence?: number; endOfTurn: boolean }
  /** The vendor saw a word-free gap (Deepgram UtteranceEnd). */
  | { type: 'utterance_end' }
  | { type: 'error'; message: string; recoverable: boolean };

export interface AsrStreamOptions {
  /** Sample rate of what will be pushed. */
  sampleRateHz: number;
  /** `linear16` unless the transport is mu-law and the provider takes it directly. */
  encoding: 'linear16' | 'mulaw';
  language?: string;
  model?: string;
}

export interface AsrStream extends AsyncIterable<AsrEvent> {
  /** Push one frame of audio. Must not block; providers buffer boundedly and drop oldest. */
  push(frame: Int16Array | Uint8Array): void;
  /** Ask the provider to finalize what it has heard so far (end of turn forced by us). */
  flush(): void;
  /** Graceful end: finish processing, then the iterator completes. */
  end(): void;
  /** Abort now. Idempotent. */
  close(): void;
}

export interface AsrProvider {
  readonly label: string;
  readonly capabilities: { interim: boolean; acceptsMulaw: boolean; sampleRatesHz: number[] };
  stream(opts: AsrStreamOptions): AsrStream;
  /** Optional connection pre-warm at session start. */
  warm?(): Promise<void>;
  /** Releases shared or pre-warmed connections (idempotent). Streams already open are unaffected. */
  close?(): void;
}

// ---------------------------------------------------------------- LLM
export interface LlmToolSpec {
  name: string;
  description: string;
  parameters: Record<string, unknown>;
}

export interface LlmToolCall {
  id: string;
  name: string;
  /** Raw JSON arguments as the model produced them. */
  arguments: string;
}

export type LlmMessage =
  | { role: 'system'; content: string }
  | { role: 'user'; content: string }
  | { role: 'assistant'; content: string | null; toolCalls?: LlmToolCall[] }
  | { role: 'tool'; toolCallId: string; content: string };

export type LlmEvent =
  | { type: 'text'; delta: string }
  | { type: 'tool_calls'; calls: LlmToolCall[] }
  | { type: 'done'; finishReason: string; usage?: { inputTokens: number; outputTokens: number } };

export interface LlmRequest {
  messages: LlmMessage[];
  tools: LlmToolSpec[];
  model?: string;
  temperature?: number;
  /**
   * Forces one call of this offered tool and nothing else (structured output: the post-call
   * analysis asks for its JSON object this way). Default: the model chooses (`auto`).
   */
  toolChoice?: string;
  signal: AbortSignal;
}

export interface LlmProvider {
  readonly label: string;
  readonly model: string;
  readonly capabilities: { tools: boolean; parallelToolCalls: boolean };
  /** Streams one completion; throws (or the iterator throws) on failure; aborts on `signal`. */
  stream(req: LlmRequest): AsyncIterable<LlmEvent>;
  warm?(): Promise<void>;
  /** Releases shared or pre-warmed connections (idempotent). */
  close?(): void;
}

// ---------------------------------------------------------------- TTS
export interface TtsRequest {
  text: string;
  voice?: string;
  model?: string;
  language?: string;
  /** The rate the caller's transport wants; providers that can produce it directly should. */
  preferredSampleRateHz: number;
  signal: AbortSignal;
}

export interface TtsProvider {
  readonly label: string;
  readonly capabilities: { streaming: boolean; sampleRatesHz: number[] };
  /** Streams PCM chunks for one piece of text; aborts on `signal`. */
  synthesize(req: TtsRequest): AsyncIterable<PcmChunk>;
  warm?(): Promise<void>;
  /** Releases shared or pre-warmed connections (idempotent). */
  close?(): void;
}
