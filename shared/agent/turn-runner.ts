/**
 * One agent turn's asynchronous work: LLM steps (with tools, run in parallel when the model asks
 * for several) and streaming TTS of each finished sentence. It owns no call state: it reports every
 * result to the actor's mailbox tagged with its turn, and stops at once when its signal aborts.
 *
 * Lives in shared/ (moved from media-engine/session) so the control plane's simulation tests
 * (control-plane/simtests) run an agent's turns with the same code as a live call, in text mode
 * (no `tts`: nothing is synthesised, the run is as fast as the LLM and the tools).
 */
import type { LlmMessage, LlmProvider, LlmToolCall, LlmToolSpec, TtsProvider } from '../providers/types.js';
import { AsyncQueue } from '../providers/async-queue.js';
import { ProviderError } from '../providers/errors.js';
import { MAX_TOOL_CALLS_PER_RESPONSE, responseTooLarge } from '../providers/llm/limits.js';
import { SentenceChunker } from './chunker.js';
import type { PcmChunk } from '../providers/types.js';
import type { ToolResult } from './tools.js';

/** Tool-using turns may loop model -> tools -> model; this bounds it. */
export const MAX_LLM_STEPS = 5;
/**
 * Sentences waiting for TTS in one turn. Overflow policy: further text is not spoken (it still
 * reaches the transcript); 512 pieces of up to 240 characters is far beyond a spoken answer.
 */
const MAX_PENDING_PIECES = 512;
/**
 * Characters of one LLM step's text. About 20 minutes of speech: a model that does not stop (or a
 * compatible server that streams forever) is cut here; what came before the cut is spoken.
 */
export const MAX_STEP_TEXT_CHARS = 20_000;
/**
 * Wall time of one LLM step. The adapters' idle timeout ends a silent stream; this ends one that
 * keeps sending chunks with nothing in them.
 */
export const MAX_STEP_MS = 120_000;
/**
 * How far a sentence's audio may fall behind real time once it started (the caller hears a gap of
 * this much): a vendor dripping a few bytes every few seconds resets every idle timer and never
 * ends the sentence; past this the piece fails (`tts_failed`, TTS_TOO_SLOW) and the run goes on.
 */
export const MAX_TTS_BEHIND_MS = 10_000;

/**
 * Most audio one sentence may bring: max(10 s, 400 ms per character), several times any voice's
 * pace (about 70-100 ms a character; a digit read as a word ~300 ms). A vendor that streams
 * without end (a loop) fails the piece with TTS_TOO_LONG instead of holding the turn for ever;
 * the turn's later sentences are not requested (a stream that stops sending is the adapters'
 * idle timeout's).
 */
export function maxTtsAudioMs(text: string): number {
  return Math.max(10_000, 400 * text.length);
}

/**
 * One function the LLM may call: its spec and `run`, which never throws (failures are error
 * results). Structurally the same as the engine's `CallTool` (media-engine/session/call-tools.ts).
 */
export interface AgentTool {
  spec: LlmToolSpec;
  run(argsJson: string, signal: AbortSignal): Promise<ToolResult>;
}

/** What a run reports, in order, tagged by the caller with its run id (the actor's mailbox alphabet for runs). */
export type TurnMsg =
  /** `atMs`: the runner's clock when the request started (the message may wait in the mailbox). */
  | { kind: 'llm_started'; step: number; atMs: number }
  | { kind: 'llm_delta'; step: number; text: string }
  | { kind: 'llm_step_done'; step: number; text: string; ttfbMs: number; totalMs: number; inputTokens: number; outputTokens: number; toolCalls: number }
  | { kind: 'tools_started'; step: number; calls: LlmToolCall[]; llmMs: number; /** `now()` as the tools start. */ atMs: number }
  | { kind: 'tool_progress'; step: number; call: LlmToolCall }
  | { kind: 'tool_result'; step: number; call: LlmToolCall; result: ToolResult }
  /** `code`: the ProviderError code when there was one (RESPONSE_TOO_LARGE for our own bounds). */
  /** `ttfbMs` / `totalMs`: the failed step's timing when text had arrived before the failure (it was spoken). */
  | { kind: 'llm_error'; step: number; message: string; code?: string; ttfbMs?: number; totalMs?: number }
  | { kind: 'tts_piece_start'; text: string; step: number }
  | { kind: 'tts_audio'; chunk: PcmChunk }
  | { kind: 'tts_piece_end' }
  | { kind: 'tts_retry'; attempt: number; backoffMs: number }
  | { kind: 'tts_exhausted'; attempt: number }
  /** A piece's speech failed (before any audio, or cut mid-stream): skipped, the run goes on. */
  | { kind: 'tts_failed'; message: string; code?: string; partial: boolean }
  | { kind: 'tts_done'; genMs: number; apiTtfbMs: number; step: number }
  | { kind: 'run_done'; appended: LlmMessage[]; assistantText: string };

/**
 * What one LLM step of a run uses when it differs per step: in flow mode a transition taken in
 * step n gives step n+1 the new node's instructions, tools, temperature and voice.
 */
export interface StepContext {
  tools: readonly AgentTool[];
  /** Replaces the system prompt (the first message) for this step. */
  system?: string;
  temperature?: number;
  /** TTS voice of the text of this step. */
  voice?: string;
  /** A called name that is not among `tools`: a tool that answers it (e.g. a refused transition), else "unknown tool". */
  unknownTool?: (name: string) => ToolResult | undefined;
}

export interface TurnRunInput {
  messages: LlmMessage[];
  /** The call's tools (`call-tools.ts`), built once per call. */
  tools: readonly AgentTool[];
  llm: LlmProvider;
  /** Absent: text mode (simulation tests): the answer is not synthesised, no `tts_*` message is posted. */
  tts?: TtsProvider;
  ttsVoice?: string;
  ttsModel?: string;
  language?: string;
  ttsSampleRateHz: number;
  /** Flow mode: the context of each LLM step (else `tools`, the system prompt in `messages`, the call's voice). */
  step?: () => StepContext;
  /** `speakOnly`: no LLM, just say this text (welcome, nudges, goodbyes). */
  speakOnly?: string;
  signal: AbortSignal;
  post: (msg: TurnMsg) => void;
  now: () => number;
}

export async function runTurn(input: TurnRunInput): Promise<void> {
  const { post, signal, now } = input;
  const pieces = new AsyncQueue<Piece>(MAX_PENDING_PIECES);
  const tts = input.tts;
  const ttsTask = tts ? speakPieces(input, tts, pieces) : drain(pieces);
  const appended: LlmMessage[] = [];
  let assistantText = '';
  try {
    if (input.speakOnly !== undefined) {
      pieces.push({ text: input.speakOnly, step: 0 });
      assistantText = input.speakOnly;
    } else {
      assistantText = await runLlmSteps(input, pieces, appended);
    }
  } finally {
    pieces.end();
  }
  await ttsTask;
  if (!signal.aborted) post({ kind: 'run_done', appended, assistantText });
  void now;
}

/** A sentence to speak, with the step it came from and (flow mode) the node's voice. */
interface Piece {
  text: string;
  step: number;
  voice?: string;
}

async function runLlmSteps(input: TurnRunInput, pieces: AsyncQueue<Piece>, appended: LlmMessage[]): Promise<string> {
  const { post, signal, now } = input;
  const messages = [...input.messages];
  const chunker = new SentenceChunker();
  let spoken = '';
  for (let step = 1; step <= MAX_LLM_STEPS; step++) {
    if (signal.aborted) return spoken;
    const ctx = input.step?.();
    const tools = ctx?.tools ?? input.tools;
    const toolSpecs: LlmToolSpec[] = tools.map((t) => t.spec);
    if (ctx?.system !== undefined && messages[0]?.role === 'system') messages[0] = { role: 'system', content: ctx.system };
    const voice = ctx?.voice;
    const started = now();
    post({ kind: 'llm_started', step, atMs: started });
    let firstTokenAt = 0;
    let stepText = '';
    let calls: LlmToolCall[] = [];
    let usage = { inputTokens: 0, outputTokens: 0 };
    try {
      for await (const ev of input.llm.stream({ messages, tools: toolSpecs, signal, ...(ctx?.temperature !== undefined ? { temperature: ctx.temperature } : {}) })) {
        if (signal.aborted) return spoken;
        if (now() - started > MAX_STEP_MS) throw responseTooLarge(input.llm.label, `no end of the answer within ${MAX_STEP_MS} ms`);
        if (ev.type === 'text') {
          if (!ev.delta) continue;
          if (!firstTokenAt) firstTokenAt = now();
          const room = MAX_STEP_TEXT_CHARS - stepText.length;
          const delta = ev.delta.length > room ? ev.delta.slice(0, room) : ev.delta;
          stepText += delta;
          if (delta) post({ kind: 'llm_delta', step, text: delta });
          for (const p of chunker.push(delta)) pieces.push({ text: p, step, voice });
          // Leaving the loop cancels the vendor's stream (the adapters' `finally`).
          if (ev.delta.length > room) throw responseTooLarge(input.llm.label, `answer longer than ${MAX_STEP_TEXT_CHARS} characters: cut there`);
        } else if (ev.type === 'tool_calls') {
          if (!firstTokenAt) firstTokenAt = now();
          calls = calls.concat(ev.calls);
          // Whatever the adapter: one step never runs more tools than one response may ask for.
          if (calls.length > MAX_TOOL_CALLS_PER_RESPONSE) throw responseTooLarge(input.llm.label, `more than ${MAX_TOOL_CALLS_PER_RESPONSE} tool calls in one response`);
        } else if (ev.type === 'done' && ev.usage) {
          usage = ev.usage;
        }
      }
    } catch (err) {
      if (signal.aborted) return spoken;
      const code = err instanceof ProviderError ? err.code : undefined;
      const timing = firstTokenAt ? { ttfbMs: Math.round(firstTokenAt - started), totalMs: Math.round(now() - started) } : {};
      post({ kind: 'llm_error', step, message: (err as Error).message || 'LLM call failed', ...(code ? { code } : {}), ...timing });
      for (const p of chunker.flush()) pieces.push({ text: p, step, voice });
      // What was streamed before the failure is spoken, so the model must know it said it.
      if (stepText) appended.push({ role: 'assistant', content: stepText });
      return spoken + stepText;
    }
    for (const p of chunker.flush()) pieces.push({ text: p, step, voice });
    const end = now();
    spoken += stepText;
    post({
      kind: 'llm_step_done',
      step,
      text: stepText,
      ttfbMs: Math.round((firstTokenAt || end) - started),
      totalMs: Math.round(end - started),
      toolCalls: calls.length,
      ...usage,
    });
    if (calls.length === 0) {
      appended.push({ role: 'assistant', content: stepText });
      return spoken;
    }
    appended.push({ role: 'assistant', content: stepText || null, toolCalls: calls });
    messages.push({ role: 'assistant', content: stepText || null, toolCalls: calls });
    post({ kind: 'tools_started', step, calls, llmMs: Math.round(end - started), atMs: end });
    const results = await Promise.all(calls.map((call) => runOneTool(input, tools, ctx, step, call)));
    if (signal.aborted) return spoken;
    calls.forEach((call, i) => {
      const msg: LlmMessage = { role: 'tool', toolCallId: call.id, content: results[i].content };
      appended.push(msg);
      messages.push(msg);
    });
  }
  // The model still wanted tools after the last step: the turn ends without its answer. Said as an
  // llm_error, so the client (and the record's pipeline events) see why the caller heard nothing.
  post({ kind: 'llm_error', step: MAX_LLM_STEPS, code: TOO_MANY_TOOL_STEPS, message: `${input.llm.label}: still calling tools after ${MAX_LLM_STEPS} steps; the turn ends without an answer` });
  return spoken;
}

/** `llm_error` code of a turn whose model kept calling tools past MAX_LLM_STEPS. */
export const TOO_MANY_TOOL_STEPS = 'TOO_MANY_TOOL_STEPS';

async function runOneTool(input: TurnRunInput, tools: readonly AgentTool[], ctx: StepContext | undefined, step: number, call: LlmToolCall): Promise<ToolResult> {
  input.post({ kind: 'tool_progress', step, call });
  const tool = tools.find((t) => t.spec.name === call.name);
  const answer = tool ? undefined : ctx?.unknownTool?.(call.name);
  let result: ToolResult;
  if (answer) {
    result = answer;
  } else if (!tool) {
    result = { status: 'error', content: JSON.stringify({ error: `unknown tool ${call.name}` }), output: { error: `unknown tool ${call.name}` }, error: `unknown tool ${call.name}`, latencyMs: 0, attempts: 0 };
  } else {
    try {
      result = await tool.run(call.arguments, input.signal);
    } catch (e) {
      // Tools report failures as results; this guards against bugs so a tool never kills a call.
      const message = (e as Error).message;
      result = { status: 'error', content: JSON.stringify({ error: message }), output: { error: message }, error: message, latencyMs: 0, attempts: 1 };
    }
  }
  if (!input.signal.aborted) input.post({ kind: 'tool_result', step, call, result });
  return result;
}

function ttsTooSlow(provider: string, audioMs: number, elapsedMs: number): ProviderError {
  return new ProviderError({ provider, code: 'TTS_TOO_SLOW', message: `${provider}: ${Math.round(audioMs)} ms of audio in ${Math.round(elapsedMs)} ms: more than ${MAX_TTS_BEHIND_MS} ms behind real time` });
}

/**
 * Failures after which the turn's later sentences are not requested: a vendor that does not
 * answer (each sentence would cost its retries' timeouts: 3 x 10 s of silence) or streams without
 * end. A quick refusal (5xx, 429) and a stream too slow for real time (TTS_TOO_SLOW: the next
 * sentence may well be fine) are still tried sentence by sentence.
 */
const TTS_DOWN_CODES: ReadonlySet<string> = new Set(['FIRST_BYTE_TIMEOUT', 'CONNECT_FAILED', 'IDLE_TIMEOUT', 'TTS_TOO_LONG']);

function ttsTooLong(provider: string, audioMs: number, chars: number): ProviderError {
  return new ProviderError({ provider, code: 'TTS_TOO_LONG', message: `${provider}: more than ${Math.round(audioMs)} ms of audio for ${chars} characters: the stream does not end` });
}

/** Text mode: the sentences are consumed (the queue stays bounded) and not spoken. */
async function drain(pieces: AsyncQueue<Piece>): Promise<void> {
  for await (const piece of pieces) void piece;
}

async function speakPieces(input: TurnRunInput, tts: TtsProvider, pieces: AsyncQueue<Piece>): Promise<void> {
  const { post, signal, now } = input;
  let firstRequestAt = 0;
  let firstAudioAt = 0;
  let lastStep = 0;
  let ttsDown = false;
  for await (const piece of pieces) {
    if (signal.aborted) return;
    lastStep = piece.step;
    const requestAt = now();
    if (!firstRequestAt) firstRequestAt = requestAt;
    post({ kind: 'tts_piece_start', text: piece.text, step: piece.step });
    if (ttsDown) {
      // The vendor just spent a sentence's retries without a byte: the turn's other sentences are
      // not tried (3 x 10 s of silence each); the next turn tries again.
      post({ kind: 'tts_piece_end' });
      continue;
    }
    let audioSent = false;
    let firstChunkAt = -1;
    let audioMs = 0;
    const maxAudioMs = maxTtsAudioMs(piece.text);
    try {
      for await (const chunk of tts.synthesize({
        text: piece.text,
        voice: piece.voice ?? input.ttsVoice,
        model: input.ttsModel,
        language: input.language,
        preferredSampleRateHz: input.ttsSampleRateHz,
        signal,
      })) {
        if (signal.aborted) return;
        if (!firstAudioAt) firstAudioAt = now();
        if (firstChunkAt < 0) firstChunkAt = now();
        else if (now() - firstChunkAt - audioMs > MAX_TTS_BEHIND_MS) throw ttsTooSlow(tts.label, audioMs, now() - firstChunkAt);
        audioMs += (chunk.samples.length * 1000) / chunk.sampleRateHz;
        if (audioMs > maxAudioMs) throw ttsTooLong(tts.label, audioMs, piece.text.length);
        audioSent = true;
        post({ kind: 'tts_audio', chunk });
      }
    } catch (err) {
      if (signal.aborted) return;
      // The retry decorator reported tts_retry / tts_retry_exhausted for what it retried; the
      // failure itself (a refused key, a stream cut mid-sentence) is reported here, then the
      // piece is skipped and the run goes on.
      const e = err as { message?: string; code?: unknown };
      post({ kind: 'tts_failed', message: String(e?.message ?? err).slice(0, 300), code: typeof e?.code === 'string' ? e.code : undefined, partial: audioSent });
      ttsDown = err instanceof ProviderError && TTS_DOWN_CODES.has(err.code);
    }
    post({ kind: 'tts_piece_end' });
  }
  if (signal.aborted || !firstRequestAt) return;
  post({ kind: 'tts_done', genMs: Math.round(now() - firstRequestAt), apiTtfbMs: Math.round((firstAudioAt || now()) - firstRequestAt), step: lastStep });
}
