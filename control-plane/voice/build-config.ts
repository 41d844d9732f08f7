/**
 * Session start, the pure part: published agent + start request -> the self-contained
 * `SessionConfig` an engine node runs the call from. No I/O, no clock: ids and time come in.
 * Every choice the spec leaves open is listed in docs/voice-api.md.
 */
import { AppError, invalid, notFound } from '../../shared/errors.js';
import { normalizeVariables, substitute } from '../../shared/voice/templates.js';
import type { ProviderSettings, SessionConfig, WelcomeMode } from '../../shared/voice/session-config.js';
import { textSearchConfig } from '../../shared/voice/text-search.js';
import { checkFliteVoice } from '../../shared/providers/tts/local.js';
import { SUPPORTED_PROVIDER_NAMES } from '../../shared/providers/registry.js';
import type { AgentLiveView, KnowledgeItem, ProviderKind } from './agent-view.js';

/** The spec's voice session start request (snake_case as on the wire). Empty strings mean "not given". */
export interface StartRequest {
  /** Required. */
  agent_id: string;
  user_id?: string;
  workspace_id?: string;
  welcome_message?: string;
  welcome_message_override?: string;
  /** `auto` (default), `tts`, `none`. */
  welcome_mode?: string;
  system_prompt?: string;
  system_message_override?: string;
  language?: string;
  voice?: string;
  tts_voice?: string;
  tts_model?: string;
  tts_provider?: string;
  dynamic_variables?: Record<string, unknown>;
  context?: string;
  user_background?: string;
  /** A string, or an object rendered as `key: value` lines. */
  call_details?: unknown;
  knowledge_base_ids?: string[];
  /** `system_context` (default) or `tool`. */
  kb_mode?: string;
  max_turns?: number;
  session_metadata?: Record<string, unknown>;
  /** `inbound` (default) or `outbound`. */
  call_direction?: string;
  /** Default `websocket`. */
  connection_type?: string;
  telephony_provider?: string;
  /** Programmatic callers only (telephony): the live call this session serves. Not on the public route. */
  call_id?: string;
  /** Programmatic callers only (telephony): the carrier's calling and called numbers. Not on the public route. */
  from_number?: string;
  to_number?: string;
}

export const WELCOME_MODES: readonly WelcomeMode[] = ['auto', 'tts', 'none'];
export const KB_MODES = ['system_context', 'tool'] as const;
export const CALL_DIRECTIONS = ['inbound', 'outbound'] as const;
/**
 * Estimated tokens (characters / 4, as the engine's history estimate) of knowledge folded into the
 * system prompt. Entries go in whole, in order (`always` bindings, then bases the session names),
 * while they fit; an entry that does not fit is left out of the prompt and becomes searchable with
 * `search_knowledge` instead, so nothing bound is silently lost (docs/flows.md).
 */
export const KNOWLEDGE_PROMPT_TOKEN_BUDGET = 2000;
/** Bases one session may name (`knowledge_base_ids`): the most an agent can carry. */
export const MAX_SESSION_KNOWLEDGE_IDS = 100;
/** Turn cap when neither the agent nor the request sets one. */
export const DEFAULT_MAX_TURNS = 100;
/** Idle nudges before `idle_disconnect` when agent metadata `idle_max_attempts` is unset or invalid. */
export const DEFAULT_IDLE_MAX_ATTEMPTS = 2;
export const DEFAULT_CONNECTION_TYPE = 'websocket';

const STRING_FIELDS = [
  'agent_id',
  'user_id',
  'workspace_id',
  'welcome_message',
  'welcome_message_override',
  'welcome_mode',
  'system_prompt',
  'system_message_override',
  'language',
  'voice',
  'tts_voice',
  'tts_model',
  'tts_provider',
  'context',
  'user_background',
  'kb_mode',
  'call_direction',
  'connection_type',
  'telephony_provider',
  'call_id',
  'from_number',
  'to_number',
] as const;

/**
 * Checks the request alone (types and enumerations); throws INVALID_REQUEST naming the field.
 * Cheap, so the service runs it before looking the agent up.
 */
export function validateStartRequest(req: StartRequest): void {
  if (!req || typeof req !== 'object') throw new AppError('INVALID_BODY', 'request body must be a JSON object');
  for (const f of STRING_FIELDS) {
    const v = req[f];
    if (v !== undefined && v !== null && typeof v !== 'string') throw invalid(f, 'must be a string');
  }
  if (!given(req.agent_id)) throw invalid('agent_id', 'is required');
  oneOf('welcome_mode', req.welcome_mode, WELCOME_MODES);
  oneOf('kb_mode', req.kb_mode, KB_MODES);
  oneOf('call_direction', req.call_direction, CALL_DIRECTIONS);
  if (req.max_turns !== undefined && req.max_turns !== null && !(Number.isInteger(req.max_turns) && req.max_turns > 0)) {
    throw invalid('max_turns', 'must be a positive integer');
  }
  plainObject('dynamic_variables', req.dynamic_variables);
  plainObject('session_metadata', req.session_metadata);
  // Every transport (REST, gRPC/Connect through a Value, telephony's outbound create) lands here.
  const details = req.call_details;
  if (details !== undefined && details !== null && typeof details !== 'string' && (typeof details !== 'object' || Array.isArray(details))) {
    throw invalid('call_details', 'must be a string or an object');
  }
  if (req.knowledge_base_ids !== undefined && req.knowledge_base_ids !== null) {
    if (!Array.isArray(req.knowledge_base_ids) || !req.knowledge_base_ids.every((id) => typeof id === 'string')) {
      throw invalid('knowledge_base_ids', 'must be an array of strings');
    }
    if (req.knowledge_base_ids.length > MAX_SESSION_KNOWLEDGE_IDS) throw invalid('knowledge_base_ids', `at most ${MAX_SESSION_KNOWLEDGE_IDS} ids`);
  }
}

/**
 * Resolves one session. Throws, in this order: INVALID_REQUEST (bad request field), NOT_FOUND
 * (`workspace_id` given and not the agent's: same answer as an unknown agent), CONFLICT (agent
 * never published), MISSING_PROVIDER (no ASR, LLM or TTS on the published version; `details`
 * name each missing kind as `providers.<kind>`).
 */
export function buildSessionConfig(agent: AgentLiveView, req: StartRequest, ids: { sessionId: string; nowMs: number }): SessionConfig {
  validateStartRequest(req);
  if (given(req.workspace_id) && req.workspace_id!.trim() !== agent.workspaceId) throw notFound('agent');
  if (!(agent.versionNumber > 0)) throw new AppError('CONFLICT', 'agent has no published version: publish it before starting a session');
  if (agent.flowProblem) throw new AppError('CONFLICT', agent.flowProblem, { details: [{ field: 'flow', problem: agent.flowProblem }] });
  const providers = requireProviders(agent);

  const vars = normalizeVariables(req.dynamic_variables ?? undefined);
  const welcomeMode = (text(req.welcome_mode) ?? 'auto') as WelcomeMode;
  const greeting = text(req.welcome_message_override) ?? text(req.welcome_message) ?? agent.welcomeMessage;

  const config: SessionConfig = {
    session_id: ids.sessionId,
    agent_id: agent.agentId,
    workspace_id: agent.workspaceId,
    agent_version: agent.versionNumber,
    system_prompt: composePrompt(agent, req, vars),
    // `none` answers an empty greeting so the engine has one rule: empty means silent.
    welcome_message: welcomeMode === 'none' ? '' : substitute(greeting, vars).trim(),
    welcome_mode: welcomeMode,
    language: text(req.language) ?? agent.language,
    max_turns: resolveMaxTurns(agent.maxTurns, req.max_turns ?? undefined),
    interrupt_enabled: agent.interruptEnabled,
    vad_threshold: agent.vadThreshold,
    silence_timeout_ms: agent.silenceTimeoutMs,
    idle_max_attempts: idleMaxAttempts(agent.metadata),
    providers: { asr: { ...providers.asr }, llm: { ...providers.llm }, tts: ttsWithOverrides(providers.tts, req) },
    tools: agent.tools.map((t) => ({ ...t })),
    connector_tools: agent.connectorTools.map((t) => ({ ...t, actions: t.actions.map((a) => ({ ...a })) })),
    agent_metadata: { ...agent.metadata },
    session_metadata: { ...(req.session_metadata ?? {}) },
    dynamic_variables: vars,
    call_direction: (text(req.call_direction) ?? 'inbound') as SessionConfig['call_direction'],
    connection_type: text(req.connection_type) ?? DEFAULT_CONNECTION_TYPE,
    created_at_ms: ids.nowMs,
  };
  const userId = text(req.user_id) ?? agent.userId;
  if (userId) config.user_id = userId;
  const telephony = text(req.telephony_provider);
  if (telephony) config.telephony_provider = telephony;
  const callId = text(req.call_id);
  if (callId) config.call_id = callId;
  // Only a carrier call (it has a call id) can be handed to a person on the portal.
  if (callId && agent.humanHandoff) config.human_handoff = true;
  const from = text(req.from_number);
  if (from) config.from_number = from;
  const to = text(req.to_number);
  if (to) config.to_number = to;
  if (agent.flow) config.flow = structuredClone(agent.flow);
  const searchIds = planKnowledge(agent.knowledge, req).searchIds;
  if (searchIds.length) config.knowledge_search = { item_ids: searchIds, text_search_config: textSearchConfig(config.language) };
  return config;
}

/**
 * Base prompt (override or the agent's) + appended prompt, variables substituted; then the free
 * text fields and knowledge verbatim under labelled sections (they are data, not templates).
 */
export function composePrompt(agent: AgentLiveView, req: StartRequest, vars: Record<string, string>): string {
  const parts: string[] = [];
  const base = text(req.system_message_override) ?? agent.systemPrompt;
  parts.push(substitute(base, vars).trim());
  const appended = text(req.system_prompt);
  if (appended) parts.push(substitute(appended, vars).trim());
  const context = text(req.context);
  if (context) parts.push(`## Context\n${context}`);
  const background = text(req.user_background);
  if (background) parts.push(`## User background\n${background}`);
  const details = renderCallDetails(req.call_details);
  if (details) parts.push(`## Call details\n${details}`);
  const plan = planKnowledge(agent.knowledge, req);
  if (plan.inPrompt.length) {
    const more = plan.overflow ? '\n\n(More entries are available through the search_knowledge function.)' : '';
    parts.push(`## Knowledge\n${plan.inPrompt.map(renderKnowledge).join('\n\n')}${more}`);
  }
  return parts.filter(Boolean).join('\n\n');
}

export interface KnowledgePlan {
  /** Folded into the system prompt, in order, within KNOWLEDGE_PROMPT_TOKEN_BUDGET. */
  inPrompt: KnowledgeItem[];
  /** Memory item ids the call's `search_knowledge` may return (empty: no such function). */
  searchIds: string[];
  /** Entries meant for the prompt that did not fit (they are in `searchIds`). */
  overflow: number;
}

/**
 * Where each knowledge base the agent carries goes (docs/flows.md, "Knowledge"):
 * - `always` bindings: the prompt, within the budget; what does not fit: search.
 * - `on_demand` bindings: search. Named in `knowledge_base_ids` with kb_mode `system_context`
 *   (the default): the prompt instead, within the same budget (overflow: search).
 * - kb_mode `tool`: named bases stay searchable only (never folded).
 * Ids the agent does not carry are ignored (the start route needs no login: a session must not
 * reach other memory items of the workspace). Empty entries are skipped.
 */
export function planKnowledge(items: KnowledgeItem[], req: StartRequest): KnowledgePlan {
  const mode = text(req.kb_mode) ?? 'system_context';
  const asked = new Set(mode === 'system_context' ? (req.knowledge_base_ids ?? []) : []);
  const usable = items.filter((k) => k.content.trim() !== '');
  const wanted = [...usable.filter((k) => k.mode === 'always'), ...usable.filter((k) => k.mode !== 'always' && asked.has(k.id))];
  const inPrompt: KnowledgeItem[] = [];
  const search = new Set(usable.filter((k) => k.mode === 'on_demand').map((k) => k.id));
  let tokens = 0;
  let overflow = 0;
  for (const k of wanted) {
    const cost = Math.ceil((renderKnowledge(k).length + 2) / 4);
    if (tokens + cost <= KNOWLEDGE_PROMPT_TOKEN_BUDGET) {
      inPrompt.push(k);
      tokens += cost;
      search.delete(k.id);
    } else {
      overflow++;
      search.add(k.id);
    }
  }
  return { inPrompt, searchIds: [...search], overflow };
}

function renderKnowledge(k: KnowledgeItem): string {
  const body = k.content.trim();
  return k.title.trim() ? `### ${k.title.trim()}\n${body}` : body;
}

export function renderCallDetails(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v.trim();
  if (typeof v === 'object' && !Array.isArray(v)) {
    return Object.entries(v as Record<string, unknown>)
      .filter(([, x]) => x !== undefined && x !== null && x !== '')
      .map(([k, x]) => `${k}: ${typeof x === 'string' ? x : JSON.stringify(x)}`)
      .join('\n');
  }
  return JSON.stringify(v);
}

/** The agent's cap is hard: a request can lower it, never raise it. An agent without a cap takes the request's value, else the default. */
export function resolveMaxTurns(agentMaxTurns: number, requested: number | undefined): number {
  const cap = agentMaxTurns > 0 ? agentMaxTurns : undefined;
  if (requested === undefined) return cap ?? DEFAULT_MAX_TURNS;
  return cap === undefined ? requested : Math.min(cap, requested);
}

/** Agent metadata `idle_max_attempts`: an integer 0..100 (a numeric string is accepted); anything else -> 2. */
export function idleMaxAttempts(metadata: Record<string, unknown>): number {
  const raw = metadata.idle_max_attempts;
  const n = typeof raw === 'string' && raw.trim() !== '' ? Number(raw) : raw;
  return typeof n === 'number' && Number.isInteger(n) && n >= 0 && n <= 100 ? n : DEFAULT_IDLE_MAX_ATTEMPTS;
}

function requireProviders(agent: AgentLiveView): Record<ProviderKind, ProviderSettings> {
  const missing = (['asr', 'llm', 'tts'] as const).filter((k) => !agent.providers[k]?.provider_name);
  if (missing.length) {
    throw new AppError('MISSING_PROVIDER', `agent's published version has no ${missing.join(', ')} provider`, {
      details: missing.map((k) => ({ field: `providers.${k}`, problem: 'missing' })),
    });
  }
  return agent.providers as Record<ProviderKind, ProviderSettings>;
}

/**
 * `tts_provider` naming another vendor starts from a clean slate: the agent's key, base URL, model
 * and voice belong to its own vendor and must never be sent elsewhere. Then `tts_model`, and
 * `tts_voice` (else `voice`) apply.
 */
function ttsWithOverrides(agentTts: ProviderSettings, req: StartRequest): ProviderSettings {
  const vendor = text(req.tts_provider);
  // A 400 now, not a session that starts and then refuses its socket (UNKNOWN_PROVIDER, close 1008).
  if (vendor && !SUPPORTED_PROVIDER_NAMES.tts.includes(vendor.toLowerCase())) throw invalid('tts_provider', `must be one of ${SUPPORTED_PROVIDER_NAMES.tts.join(', ')}`);
  const tts: ProviderSettings = vendor && vendor.toLowerCase() !== agentTts.provider_name.toLowerCase() ? { provider_name: vendor } : { ...agentTts };
  const model = text(req.tts_model);
  if (model) tts.model_name = model;
  const voice = text(req.tts_voice) ?? text(req.voice);
  if (voice) tts.voice = voice;
  // The offline `local` TTS has a fixed set of voices (Flite would quietly use another): a 400 now, not a refused socket later.
  if (tts.provider_name.trim().toLowerCase() === 'local') {
    const asked = tts.voice || tts.model_name;
    try {
      checkFliteVoice(asked);
    } catch (err) {
      throw invalid(voice ? (text(req.tts_voice) ? 'tts_voice' : 'voice') : model ? 'tts_model' : 'providers.tts.model_name', (err as Error).message.replace(/^local TTS: /, ''));
    }
  }
  return tts;
}

function given(v: string | undefined | null): boolean {
  return typeof v === 'string' && v.trim() !== '';
}

/** The trimmed value of a given text field, else undefined. */
function text(v: string | undefined | null): string | undefined {
  return typeof v === 'string' && v.trim() !== '' ? v.trim() : undefined;
}

function oneOf(field: string, v: string | undefined | null, allowed: readonly string[]): void {
  if (given(v) && !allowed.includes(v!.trim())) throw invalid(field, `must be one of ${allowed.join(', ')}`);
}

/**
 * The most a free-form object of the start request may weigh as JSON. It travels with the session
 * config into the registry (and each replica's replay journal) for the life of the call, and the
 * start route needs no login: the body limit alone would let a caller park 1 MB per session.
 */
export const MAX_START_OBJECT_BYTES = 16 * 1024;

function plainObject(field: string, v: unknown): void {
  if (v === undefined || v === null) return;
  if (typeof v !== 'object' || Array.isArray(v)) throw invalid(field, 'must be an object');
  if (Buffer.byteLength(JSON.stringify(v)) > MAX_START_OBJECT_BYTES) throw invalid(field, `must be at most ${MAX_START_OBJECT_BYTES} bytes as JSON`);
}
