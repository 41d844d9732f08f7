/**
 * The resolved, self-contained configuration of one voice session. The control plane builds it at
 * session start from the agent's PUBLISHED version plus the start request's overrides, stores it in
 * the registry (30 s connect deadline), and the engine node that claims the session runs the call
 * from it alone: no database read on the call path.
 */

import type { FlowConfig } from './flow.js';

export interface ProviderSettings {
  provider_name: string;
  api_key?: string;
  model_name?: string;
  base_url?: string;
  /** TTS voice (per-session override wins). */
  voice?: string;
}

export interface HttpToolConfig {
  id: string;
  name: string;
  description: string;
  /** JSON Schema of the arguments. */
  parameters: Record<string, unknown>;
  endpoint_url: string;
  http_method: string;
  headers: Record<string, string>;
  auth_type?: string;
  /** Decrypted; never logged. */
  auth_token?: string;
  /** Template: `{{arg}}` placeholders are replaced with the model's arguments. */
  request_body?: unknown;
  /** Dot path into the JSON response to feed back to the model (empty: the whole body). */
  response_path?: string;
  timeout_ms: number;
  retry_count: number;
}

/**
 * One connector-bound tool of the agent (issue 18; docs/connectors.md "Connector tools on
 * calls"). No credential here: the engine opens the connection's sealed credential from Postgres
 * when the model calls an action, so a disconnect or a reconnect takes effect mid-call.
 */
export interface ConnectorToolConfig {
  /** The agent tool's id. */
  tool_id: string;
  connection_id: string;
  /** The connection's provider (catalog id), checked live at session start. */
  provider_id: string;
  /** Bound of one action run (every vendor request of it). */
  timeout_ms: number;
  actions: ConnectorActionConfig[];
}

export interface ConnectorActionConfig {
  /** `<provider_id>__<action>`: the function name the model sees. */
  name: string;
  description: string;
  /** JSON Schema the model fills: the action's parameters minus the pinned ones. */
  parameters: Record<string, unknown>;
  /**
   * Values pinned by the agent, merged over the model's arguments on every call. Strings may
   * hold `{{variable}}` / `{{variable|default}}`, filled from the call context at run time.
   */
  fixed: Record<string, unknown>;
}

/**
 * Knowledge the model can search during the call (`search_knowledge`, docs/flows.md): memory items
 * of the agent's workspace bound `on_demand`, named by a `kb_mode: tool` session, or `always` ones
 * that did not fit the prompt's knowledge budget. The engine queries Postgres for them (a tool call,
 * off the audio path, with a timeout).
 */
export interface KnowledgeSearchConfig {
  /** Memory item ids the search may return (workspace-fenced again by the query). */
  item_ids: string[];
  /** Postgres text search configuration of the query (from the agent's language), e.g. `english`. */
  text_search_config: string;
}

export type WelcomeMode = 'auto' | 'tts' | 'none';

/**
 * Per-call bounds that differ from the engine defaults (`media-engine/session/limits.ts`, which
 * documents each one and clamps out-of-range values). Absent keys keep the defaults.
 */
export interface CallLimitsOverrides {
  /** Injections accepted at once (token bucket size). Default 5. */
  inject_burst?: number;
  /** Injections refilled per second. Default 1. */
  inject_refill_per_s?: number;
  /** Estimated tokens of history sent to the LLM. Default 8000. */
  history_token_budget?: number;
  /** Messages kept in the call's history. Default 200. */
  history_max_messages?: number;
}

export interface SessionConfig {
  session_id: string;
  agent_id: string;
  workspace_id: string;
  user_id?: string;
  agent_version: number;
  /** Final system prompt: agent prompt (or override) + appended prompt + context fields + always-on knowledge, variables substituted. */
  system_prompt: string;
  /** Greeting after substitution; empty means none. */
  welcome_message: string;
  welcome_mode: WelcomeMode;
  language: string;
  max_turns: number;
  interrupt_enabled: boolean;
  /** 0..1 from the agent; higher = less sensitive. */
  vad_threshold: number;
  /** Caller silence after the agent finished speaking before an idle nudge. */
  silence_timeout_ms: number;
  idle_max_attempts: number;
  providers: { asr: ProviderSettings; llm: ProviderSettings; tts: ProviderSettings };
  tools: HttpToolConfig[];
  /** Connector tools of the agent whose connection was live at session start. Absent: none. */
  connector_tools?: ConnectorToolConfig[];
  /** Agent metadata (AMD keys live here). */
  agent_metadata: Record<string, unknown>;
  session_metadata: Record<string, unknown>;
  dynamic_variables: Record<string, string>;
  call_direction: 'inbound' | 'outbound';
  connection_type: string;
  telephony_provider?: string;
  /** Set for carrier calls: the live call id (telephony issue). */
  call_id?: string;
  /**
   * Carrier calls of agents with `allow_human_transfer` and `human_transfer_mode: panel`: the
   * `transfer_to_human` function and flow `transfer` nodes ask the control plane for a portal
   * agent instead of ending the call (issue 21, docs/portal.md "Hand-off").
   */
  human_handoff?: boolean;
  /**
   * Carrier calls only, E.164 as the carrier reported them: the calling and the called number.
   * Set by telephony, never by the public start route, so connector tools may trust them
   * (`{{caller_number}}`).
   */
  from_number?: string;
  to_number?: string;
  /** Per-call bounds (injection rate, LLM history budget); absent: engine defaults. */
  call_limits?: CallLimitsOverrides;
  /** `flow` mode: the published graph the call follows (docs/flows.md); absent: single prompt. */
  flow?: FlowConfig;
  /** Absent: the call has no `search_knowledge` function. */
  knowledge_search?: KnowledgeSearchConfig;
  created_at_ms: number;
}

/** The call's provider keys: vendor error text (which may echo one) is redacted of them. */
export function providerKeys(c: SessionConfig): string[] {
  const p = c.providers;
  return [p.asr.api_key, p.llm.api_key, p.tts.api_key].filter((k): k is string => !!k);
}
