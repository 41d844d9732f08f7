/**
 * Per-call bounds of what a client can push into a call and of what the call keeps for the model
 * (issue 11, "`max_turns` bypass" and "bounded state everywhere"). Defaults here; a session may
 * override them through `SessionConfig.call_limits` (set by the control plane, not by clients).
 * Out-of-range overrides are clamped into the ranges below, never trusted as is.
 */
import type { CallLimitsOverrides } from '../../shared/voice/session-config.js';

/**
 * Longest injected text in characters, on every path: the socket parser cuts `text_inject` here,
 * the control plane answers 400 beyond it on `/text`, and the actor refuses anything longer that
 * reaches it some other way. It also bounds the text folded into one pending caller turn.
 */
export const INJECT_TEXT_MAX_CHARS = 4000;

export interface CallLimits {
  /** Injections (`text_inject` frames and `/text`, both roles) accepted at once. Default 5. */
  injectBurst: number;
  /** Injections refilled per second after the burst is spent. Default 1. */
  injectRefillPerS: number;
  /**
   * Estimated tokens of the conversation history sent to the LLM (system prompt included). Oldest
   * turns are dropped first; the system prompt and the current turn are always sent. Default 8000.
   */
  historyTokenBudget: number;
  /** Messages kept in the call's history (system prompt included). Default 200. */
  historyMaxMessages: number;
}

export const DEFAULT_CALL_LIMITS: Readonly<CallLimits> = {
  injectBurst: 5,
  injectRefillPerS: 1,
  historyTokenBudget: 8000,
  historyMaxMessages: 200,
};

/** Accepted ranges; an override outside is clamped to the nearest end, a non-number ignored. */
const RANGES: Record<keyof CallLimits, readonly [number, number]> = {
  injectBurst: [1, 1000],
  injectRefillPerS: [0.01, 1000],
  historyTokenBudget: [256, 1_000_000],
  historyMaxMessages: [8, 10_000],
};

/** The limits of one call: defaults, with the session's overrides clamped into range. */
export function resolveCallLimits(overrides: CallLimitsOverrides | undefined): CallLimits {
  const pick = (key: keyof CallLimits, value: unknown): number => {
    if (typeof value !== 'number' || !Number.isFinite(value)) return DEFAULT_CALL_LIMITS[key];
    const [min, max] = RANGES[key];
    const clamped = Math.min(max, Math.max(min, value));
    return key === 'injectRefillPerS' ? clamped : Math.floor(clamped);
  };
  return {
    injectBurst: pick('injectBurst', overrides?.inject_burst),
    injectRefillPerS: pick('injectRefillPerS', overrides?.inject_refill_per_s),
    historyTokenBudget: pick('historyTokenBudget', overrides?.history_token_budget),
    historyMaxMessages: pick('historyMaxMessages', overrides?.history_max_messages),
  };
}
