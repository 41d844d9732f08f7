/**
 * Bounds on what one LLM response may hold, whatever the vendor (or a compatible server that
 * misbehaves) streams. Tool calls are assembled in memory until the response ends, so they are
 * bounded here; streamed text is bounded by the turn runner (shared/agent/turn-runner.ts).
 */
import { ProviderError } from '../errors.js';

/** Tool calls in one response. Parallel calls beyond a handful are a model gone wrong. */
export const MAX_TOOL_CALLS_PER_RESPONSE = 32;
/** Characters of one tool call's JSON arguments. */
export const MAX_TOOL_ARGUMENTS_CHARS = 64 * 1024;
/** Characters of a tool call's name (vendors allow 64; names are streamed in pieces too). */
export const MAX_TOOL_NAME_CHARS = 256;

/** Not retryable: the same request would most likely stream the same thing again. */
export function responseTooLarge(provider: string, what: string): ProviderError {
  return new ProviderError({ provider, code: 'RESPONSE_TOO_LARGE', message: `${provider}: ${what}` });
}

/** Throws when `calls` (already holding `count` calls) may not take one more. */
export function checkToolCallCount(provider: string, count: number): void {
  if (count >= MAX_TOOL_CALLS_PER_RESPONSE) throw responseTooLarge(provider, `more than ${MAX_TOOL_CALLS_PER_RESPONSE} tool calls in one response`);
}

/** Throws when a call being assembled has outgrown its bounds. */
export function checkToolCall(provider: string, call: { name: string; arguments: string }): void {
  if (call.arguments.length > MAX_TOOL_ARGUMENTS_CHARS) throw responseTooLarge(provider, `tool call arguments longer than ${MAX_TOOL_ARGUMENTS_CHARS} characters`);
  if (call.name.length > MAX_TOOL_NAME_CHARS) throw responseTooLarge(provider, `tool name longer than ${MAX_TOOL_NAME_CHARS} characters`);
}

/** A vendor's usage count as a whole number within the records' int32 columns (anything else: 0). */
export function tokenCount(v: unknown): number {
  return typeof v === 'number' && Number.isFinite(v) && v > 0 ? Math.min(Math.floor(v), 2_147_483_647) : 0;
}
